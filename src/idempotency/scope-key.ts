export interface KeyScope {
  tenant: string;
  service: string;
  operation: string;
  /** Version of the response schema the record stores (a bump never re-runs a key already used: see findOwner). */
  schemaVersion: number;
  clientKey: string;
}

/**
 * `{tenant}:{service}:{operation}:v{schema}:{client key}`. Tenant, service
 * and operation never contain ':' (validated at config and declaration), and
 * the client key comes last, so two different scopes never build one string.
 */
export function scopeKey(scope: KeyScope): string {
  for (const part of [scope.tenant, scope.service, scope.operation]) {
    if (part.length === 0 || part.includes(':')) throw new Error(`Invalid scope part "${part}"`);
  }
  return `${scope.tenant}:${scope.service}:${scope.operation}:v${scope.schemaVersion}:${scope.clientKey}`;
}
