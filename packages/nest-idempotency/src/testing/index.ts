/**
 * Internals for tests (this repository's and yours). Unstable: not covered
 * by semver, and never imported by the package's own code.
 */
export { canonicalJson, fingerprintRequest, FINGERPRINT_ALGORITHM, LEGACY_FINGERPRINT_ALGORITHM } from '../protocol/fingerprint.js';
export { legacyScopeKeys, scopeKey } from '../protocol/ids.js';
export { tombstoneId, tombstoneScope } from '../protocol/tombstones.js';
export { ResponseCipher } from '../protocol/stored-responses.js';
export { InFlightWaiters } from '../protocol/in-flight-waiters.js';
export { IdempotencyFastPath, RedisKeys } from '../fast-path/fast-path.js';
export { Sealer } from '../fast-path/cache-entry.js';
export { IdempotencyRecordRepository } from '../store/record.repository.js';
export { IdempotencyRecordSchema, IDEMPOTENCY_MODELS } from '../store/schemas.js';
