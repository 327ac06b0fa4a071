import { type Fingerprint, isErasedFingerprint, matchesAnyBody, sameFingerprint } from './fingerprint.js';

/** The stored fingerprint's shape, here for store/, which imports types from this file only. */
export type { Fingerprint };
import { randomUUID } from 'node:crypto';
import { IdempotencyKeyReusedError } from '../errors.js';

/**
 * `canceled`: the key was canceled (IdempotencyCancellation): whatever it
 * did was undone, or it never ran, and no request under it ever runs again
 * while the record lives (409 idempotency_key_canceled for any body).
 */
export type RecordStatus = 'pending' | 'complete' | 'failed' | 'canceled';

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

/**
 * A cancel of the key (IdempotencyCancellation), written first when the
 * cancel begins: from then on every request under the key is answered 409
 * idempotency_key_canceled, even while the undo is still running, and the
 * reaper leaves the record to the cancel (repeating the cancel finishes it).
 */
export interface RecordCancellation {
  requestedAt: Date;
  /** Set when the record became `canceled` (the undo done); null while the cancel runs. */
  canceledAt: Date | null;
  /** The consumer's word for what the cancel did (orders: never_run, canceled_before_charge, refunded, nothing_to_undo). */
  outcome: string | null;
  /** What the key created, if anything (the order), for the 409's Location. */
  location: string | null;
  /** Ids the consumer names its undo by (orders: orderId, refundId). */
  references: Record<string, string>;
  /** This cancel took the lease of an attempt in flight and stopped it. */
  stoppedInFlight: boolean;
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
  /** Set by a cancel of the key (absent on records written before cancels existed, and on most). */
  cancellation?: RecordCancellation | null;
  createdAt: Date;
  updatedAt: Date;
  /**
   * When the attempt finished (its answer stored): replays send it as
   * Idempotent-Original-Date. Absent on records finished before it existed
   * (answeredAt() falls back on updatedAt); null while pending.
   */
  finishedAt?: Date | null;
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
  /** When the record finished (set by IdempotencyAttempts when it finishes). */
  finishedAt?: Date;
}

/**
 * When a finished record's answer was stored: its finishedAt, or for a
 * record finished before that field existed its updatedAt (the finishing
 * time, unless an erasure changed the record since: then the erasure's).
 */
export function answeredAt(record: Pick<IdempotencyRecord, 'finishedAt' | 'updatedAt'>): Date {
  return record.finishedAt ?? record.updatedAt;
}

/** A fresh lease (new owner token unless renewing one) that runs for `timeoutMs` from `now`. */
export function newLease(now: Date, timeoutMs: number, owner: string = randomUUID()): RecordLease {
  return { owner, lockedAt: now, expiresAt: new Date(now.getTime() + timeoutMs) };
}

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
  | 'erased'
  /** The key was canceled (or a cancel of it is running): 409 for any body, never a new attempt. */
  | 'canceled';

/**
 * What to do with a record found under the key. Unfinished work is never
 * replaced, even past its expiry: it may hold a charge that only resuming
 * can account for.
 */
export function decide(record: IdempotencyRecord, fingerprint: Fingerprint, now: Date): RecordDecision {
  const finished = record.status !== 'pending';
  // Before the fingerprint: a canceled key refuses every body until its own retention (record TTL +
  // tombstone period, set by the cancel) ends; then it is a finished record past retention like any other.
  if (isCanceled(record)) return finished && record.expiresAt.getTime() <= now.getTime() ? 'replace_expired' : 'canceled';
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

/** Canceled, or a cancel of it is under way: no request under the key runs again. */
export function isCanceled(record: Pick<IdempotencyRecord, 'status' | 'cancellation'>): boolean {
  return record.status === 'canceled' || !!record.cancellation;
}

/**
 * A record an erasure changed: its cached answers must leave Redis until it
 * expires. Here, not in recovery/, so fast-path/ (which forgets them) and
 * recovery/ (which erases) both depend on protocol/, not on each other.
 */
export interface ErasedRecord {
  recordId: string;
  expiresAt: Date;
}

/**
 * What is left of a finished key once its stored response is past retention:
 * enough to recognise a late retry of the same request and point it at what
 * the first one created - never the body, never a person's id.
 */
export interface Tombstone {
  /** scopeDigest + the fingerprint: one tombstone per (key, body), found by _id alone. */
  _id: string;
  /** Hash of tenant + operation + client key: the key without naming it. */
  scope: string;
  fingerprint: Fingerprint;
  /** HTTP status of the stored final answer. */
  status: number;
  /** The stored answer's Location header (the resource it created), if it had one. */
  location: string | null;
  finishedAt: Date;
  /**
   * The record's subject digest, so an erasure finds it and makes it keyed
   * (erasedTombstone); null once erased, or for a request without a subject.
   */
  subject: string | null;
  /** End of the tombstone itself; the TTL index and every lookup honour it. */
  expiresAt: Date;
}

/** What a finished record contributes to its tombstone. */
export interface FinishedKey {
  tenant: string;
  operation: string;
  clientKey: string;
  fingerprint: Fingerprint;
  subject: string | null;
}

/**
 * The record read by this key's id, if it is this key's: an id names one
 * scope, except across the 0.1 -> 0.2 upgrade. 0.1 kept a tenant raw in its
 * ids, so its record for a tenant spelled `a%3Ab` has the id tenant `a:b`'s
 * key has now. Another scope's record is never answered with, resumed or
 * canceled: the key is refused as used for another request (it was, by the
 * other tenant), until that record is purged.
 */
export function ownRecord<R extends Pick<IdempotencyRecord, 'tenant' | 'operation' | 'clientKey'>>(
  record: R | null,
  scope: { tenant: string; operation: string; clientKey: string },
): R | null {
  if (record && (record.tenant !== scope.tenant || record.operation !== scope.operation || record.clientKey !== scope.clientKey)) {
    throw new IdempotencyKeyReusedError();
  }
  return record;
}
