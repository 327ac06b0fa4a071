import type { Fingerprint } from './fingerprint.js';

export type RecordStatus = 'pending' | 'complete' | 'failed';

export interface RecordLease {
  owner: string;
  lockedAt: Date;
  expiresAt: Date;
  /**
   * Set when the worker gave the lease back after a transient failure: the
   * client's retry resumes the attempt (same order, same charge key), and the
   * reaper leaves it alone until then. A lease that simply expired (dead
   * worker) has none and is reaped at once. A new lease never carries it.
   */
  resumableUntil?: Date | null;
}

export interface SealedBody {
  keyId: string;
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
}

export interface StoredResponseDoc {
  status: number;
  headers: Record<string, string>;
  body: SealedBody;
  schemaVersion: number;
}

export interface RecordConflict {
  /** What the consumer could not write: payment, journal, outbox event, ... */
  what: string;
  detail: string | null;
  at: Date;
}

/** The plain-object shape of an idempotency_records document. */
export interface IdempotencyRecord {
  _id: string;
  tenant: string;
  operation: string;
  /** The key as the client sent it (also the tail of _id), for the tenant's admin look-ups. */
  clientKey: string;
  status: RecordStatus;
  fingerprint: Fingerprint;
  /** Response schema version (also part of the scope key). */
  schemaVersion: number;
  /** Retention of this key: it is kept at least this long after it is first used and after it finishes. */
  ttlSeconds: number;
  /** Fencing counter: +1 each time a failed attempt is restarted. */
  attempt: number;
  lease: RecordLease | null;
  /** Where the consumer's work stands (orders: pending, charged, ...). */
  recoveryPoint: string | null;
  /** Digest of the consumer's data subject (orders: the customer id), for erasure; never the id itself. */
  subject: string | null;
  response: StoredResponseDoc | null;
  /**
   * Set when the attempt found a document it would write already there with
   * other content: it cannot finish without a human. Shown by the admin API;
   * the reaper leaves such a record alone (a release hands it over again).
   */
  conflict: RecordConflict | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
  /** Set only once the record is final: the TTL index never collects unfinished work. */
  purgeAt: Date | null;
}

/** A plain response to store and replay: body is the exact bytes sent the first time. */
export interface IdempotentResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** What a worker holds while it drives one attempt; every fenced write checks `owner`. */
export interface Lease {
  recordId: string;
  owner: string;
  attempt: number;
  claimId: string;
  schemaVersion: number;
  ttlSeconds: number;
  /**
   * End of the key's retention. Finishing the attempt extends it to at least
   * TTL from then (IdempotencyAttempts updates this field), so a response is
   * never stored already expired.
   */
  keyExpiresAt: Date;
  recoveryPoint: string | null;
  /** The fingerprint the record finished with (set by IdempotencyAttempts when it finishes). */
  finishedFingerprint?: Fingerprint;
}
