import { createHash, createHmac } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';

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
 * Service and operation never contain ':' (validated at config and
 * declaration); the tenant is the app's (a URN such as `org:42` is a fine
 * tenant id), so its segment is percent-encoded (tenantSegment). The client
 * key comes last, so two scopes never build one string. The fourth segment
 * is the literal `key`: ids of earlier releases had `v{N}` there (see
 * LEGACY_SCOPE_KEY), so the two formats never collide either, even for a
 * client key such as `v1:abc`.
 */
export function scopeKey(scope: KeyScope): string {
  if (scope.tenant.length === 0) throw new Error('Invalid scope: an empty tenant');
  for (const part of [scope.service, scope.operation]) {
    if (part.length === 0 || part.includes(':')) throw new Error(`Invalid scope part "${part}"`);
  }
  return `${tenantSegment(scope.tenant)}:${scope.service}:${scope.operation}:key:${scope.clientKey}`;
}

/**
 * The tenant as an id segment: `%` and `:` percent-encoded, so it holds no
 * separator and two tenants never share a segment. A tenant without either
 * (every tenant earlier releases accepted, bar one with `%`) keeps its id.
 */
export function tenantSegment(tenant: string): string {
  return tenant.replace(/[%:]/g, (char) => (char === '%' ? '%25' : '%3A'));
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
 * scopeKey(scope); a tenant with `:` had none (it was refused). A tenant
 * with `%` had its raw id before segments were encoded: not looked up, since
 * that raw id is also a `:` tenant's id now (README, Upgrading).
 */
export function legacyScopeKeys(scope: KeyScope, upToVersion: number): string[] {
  if (scope.tenant.includes(':')) return [];
  return Array.from(
    { length: upToVersion },
    (_, index) => `${scope.tenant}:${scope.service}:${scope.operation}:v${index + 1}:${scope.clientKey}`,
  );
}

// Derived from the stored record's own fields, so the store builds leases with it (store/ imports no protocol value).
export { deriveClaimId } from '../store/claim-id.js';

/**
 * A data subject as records keep it: an HMAC of tenant + subject id under
 * the `digestKey` option, so a record never names a person in clear, an erasure
 * can still find it, and nobody without the key can test a guessed id
 * against it (an unkeyed hash of `cus_123` is found in a million guesses).
 */
export function subjectDigest(key: Buffer, tenant: string, subject: string): string {
  return createHmac('sha256', key).update(`subject\n${tenant}\n${subject}`).digest('hex');
}

/**
 * The unkeyed digest earlier releases wrote. Erasures still match it, so
 * records, tombstones and erasures written before the upgrade are found;
 * drop it one retention period (`ttlSeconds` plus
 * `tombstoneSeconds`) after the upgrade.
 */
export function legacySubjectDigest(tenant: string, subject: string): string {
  return createHash('sha256').update(`${tenant}\n${subject}`).digest('hex');
}

/** The subject digests of this deployment: the one new documents carry, and every form an erasure must find. */
@Injectable()
export class SubjectDigests {
  private readonly key: Buffer;

  constructor(@Inject(IDEMPOTENCY_SETTINGS) config: IdempotencySettings) {
    this.key = config.digestKey;
  }

  of(tenant: string, subject: string): string {
    return subjectDigest(this.key, tenant, subject);
  }

  /** The keyed digest first, then the legacy one. */
  forms(tenant: string, subject: string): string[] {
    return [this.of(tenant, subject), legacySubjectDigest(tenant, subject)];
  }
}
