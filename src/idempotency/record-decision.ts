import { isErasedFingerprint, matchesAnyBody, sameFingerprint, type Fingerprint } from './fingerprint.js';
import type { IdempotencyRecord } from './idempotency-record.js';

export type RecordDecision =
  /** Finished and past retention: treated as absent, replaced by a new claim. */
  | 'replace_expired'
  /** Same key, other request. */
  | 'mismatch'
  /** Finished with a stored response: send it again. */
  | 'replay'
  /** Someone holds a live lease: wait, then 409. */
  | 'in_flight'
  /** Unfinished and its lease expired: take the lease and resume. */
  | 'take_over'
  /** Failed without a stored response (abandoned): start a new attempt. */
  | 'restart'
  /** Its data subject was erased and it has no stored response: answer 410, never run the request again. */
  | 'erased';

/**
 * What to do with a record found under the key. Unfinished work is never
 * replaced, even past its expiry: it may hold a charge that only resuming
 * can account for.
 */
export function decide(record: IdempotencyRecord, fingerprint: Fingerprint, now: Date): RecordDecision {
  const finished = record.status !== 'pending';
  if (finished && record.expiresAt.getTime() <= now.getTime()) return 'replace_expired';
  // An erased record keeps a keyed fingerprint: another body gets 422 as before the erasure. Only
  // one the previous release erased kept none, and answers any body with its stored (410) answer.
  if (!matchesAnyBody(record.fingerprint) && !sameFingerprint(record.fingerprint, fingerprint)) return 'mismatch';
  if (finished && record.response) return 'replay';
  // An abandoned attempt of an erased subject: a new attempt would store the erased data again.
  if (finished) return isErasedFingerprint(record.fingerprint) ? 'erased' : 'restart';
  const leaseLive = record.lease !== null && record.lease.expiresAt.getTime() > now.getTime();
  return leaseLive ? 'in_flight' : 'take_over';
}
