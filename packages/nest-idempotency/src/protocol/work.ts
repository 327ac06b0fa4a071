import type { ClientSession } from 'mongoose';
import type { RequestFingerprint } from './fingerprint.js';
import type { IdempotencyRecord, IdempotentResponse, Lease } from './record.js';
import { isStoreUnreachable, type StoreDownPolicy } from '../store/mongo-errors.js';

/**
 * A guarded route's request: `check` (the default) or `new`, the client's
 * `Idempotency-Intent: new` saying it means a second one of the same body.
 */
export type DuplicateIntent = 'check' | 'new';

/**
 * What a keyed handler receives: the validated client key and the route's
 * declaration. The protocol's input, whoever builds it (the HTTP interceptor,
 * or a caller without HTTP), so it lives here and http/ depends on protocol/,
 * never the reverse.
 */
export interface IdempotencyKeyContext {
  clientKey: string;
  operation: string;
  ttlSeconds?: number;
  schemaVersion: number;
  onStoreDown?: StoreDownPolicy;
  method: string;
  /** The route's template (`/payments/:id/capture`), or any stable name of the operation's entry for a caller without HTTP. */
  route: string;
  /**
   * The path parameters the router resolved (`{ id: 'pay_123' }`): with the
   * template they name the resource, and both are in the fingerprint, so a
   * key reused on another resource is 422. A caller without HTTP that shares
   * a route's key space passes the same parameters.
   */
  params?: Readonly<Record<string, string>>;
  /** Set by the interceptor: the key's record, read once before validation (IdempotencyService.lookUpEarly). */
  prefetched?: PrefetchedOwner;
  /** `@Idempotent({ duplicateGuard: true })` routes only: the request's Idempotency-Intent. */
  duplicateGuard?: DuplicateIntent;
}

export interface IdempotentRequest {
  tenant: string;
  operation: string;
  clientKey: string;
  schemaVersion: number;
  ttlSeconds: number;
  fingerprint: RequestFingerprint;
  /** Data subject for erasure (orders: the customer id); stored only as a digest. */
  subject?: string;
  /** When the request arrived (the Clock's time): an erasure of its subject after that stops it. */
  receivedAt: Date;
  /** The route's choice when MongoDB is unreachable (@Idempotent({ onStoreDown })); 'closed' when absent. */
  onStoreDown?: StoreDownPolicy;
  /** The key's record as read before validation (IdempotencyService.lookUpEarly): the first round uses it instead of reading again. */
  prefetched?: PrefetchedOwner;
  /** Set on a route declared `@Idempotent({ duplicateGuard: true })`: checked against other keys' bodies, or `new` (protocol/duplicate-guard.ts). */
  duplicateGuard?: DuplicateIntent;
}

/** A look-up already made for this request; `record` null means the key had no record then. */
export interface PrefetchedOwner {
  record: IdempotencyRecord | null;
}

/** A consumer's work, split where the claim transaction ends. */
export interface IdempotentWork {
  /** First business writes; runs inside the claim transaction, so it may run more than once. */
  begin(session: ClientSession, lease: Lease): Promise<void>;
  /**
   * Drives the attempt to its end and returns the response it stored with
   * IdempotencyAttempts.complete/fail. Throwing means "not finished, nothing to store": the
   * lease is released and the record stays resumable.
   */
  resume(lease: Lease): Promise<IdempotentResponse>;
  /**
   * Only for routes declared `onStoreDown: 'open'`, whose own writes are
   * naturally idempotent: the whole operation, run when the idempotency store
   * is unreachable. Nothing is recorded and nothing will be replayed.
   */
  withoutGuard?(): Promise<IdempotentResponse>;
}

export interface IdempotentResult {
  response: IdempotentResponse;
  replayed: boolean;
  keyExpiresAt: Date;
  /** On a replay: when the original answer was stored (sent as Idempotent-Original-Date). */
  originalAt?: Date;
}

/**
 * Whether this failure lets an 'open' route run unguarded: only an
 * unreachable or unanswering store, never a store that answered (a write
 * conflict on a hot key is contention, not an outage: running unguarded
 * then would skip the guard exactly when it is needed), and only when the
 * work says how to run without it.
 */
export function runsWithoutGuard(policy: StoreDownPolicy | undefined, work: IdempotentWork, error: unknown): boolean {
  return policy === 'open' && typeof work.withoutGuard === 'function' && isStoreUnreachable(error);
}
