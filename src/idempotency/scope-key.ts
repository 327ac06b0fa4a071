export interface KeyScope {
  tenant: string;
  service: string;
  operation: string;
  clientKey: string;
}

/**
 * `{tenant}:{service}:{operation}:key:{client key}` - the record id, and so
 * the unit of mutual exclusion: every claim of one key, whatever response
 * schema version the claiming instance runs, inserts this one `_id`, and the
 * second insert fails (E11000) instead of creating a second record. The
 * schema version is a field of the record and of its stored response.
 *
 * Tenant, service and operation never contain ':' (validated at config and
 * declaration) and the client key comes last, so two scopes never build one
 * string. The fourth segment is the literal `key`: ids of earlier releases
 * had `v{N}` there (see LEGACY_SCOPE_KEY), so the two formats never collide
 * either, even for a client key such as `v1:abc`.
 */
export function scopeKey(scope: KeyScope): string {
  for (const part of [scope.tenant, scope.service, scope.operation]) {
    if (part.length === 0 || part.includes(':')) throw new Error(`Invalid scope part "${part}"`);
  }
  return `${scope.tenant}:${scope.service}:${scope.operation}:key:${scope.clientKey}`;
}

/**
 * Record ids written before the key became version-less:
 * `{tenant}:{service}:{operation}:v{schema}:{client key}`. Such records are
 * still read (and finished, replayed, reaped) until they expire; nothing
 * creates them any more.
 */
export const LEGACY_SCOPE_KEY = /^[^:]+:[^:]+:[^:]+:v\d+:/;

/**
 * Every id an earlier release may have given this key's record: one per
 * response schema version up to the route's current one (versions only go
 * up), so the owner look-up stays a read by _id. The parts are those of
 * scopeKey(scope), already checked there.
 */
export function legacyScopeKeys(scope: KeyScope, upToVersion: number): string[] {
  return Array.from(
    { length: upToVersion },
    (_, index) => `${scope.tenant}:${scope.service}:${scope.operation}:v${index + 1}:${scope.clientKey}`,
  );
}
