import { createHash } from 'node:crypto';
import { problem, PROBLEM_CONTENT_TYPE } from '../problem.js';
import { erasedFingerprint, sameFingerprint, type Fingerprint, type RequestFingerprint, storedForms } from './fingerprint.js';
import type { FinishedKey, IdempotentResponse, Tombstone } from './record.js';
import { Injectable } from '@nestjs/common';
import { IdempotencyClock, IdempotencyMetrics } from '../ports.js';
import type { IdempotentRequest, IdempotentResult } from './work.js';
import { TombstoneRepository } from '../store/tombstone.repository.js';

export type { FinishedKey, Tombstone } from './record.js';

export type LateRetryDecision = 'answer_expired' | 'new_request';

export function tombstoneScope(key: Pick<FinishedKey, 'tenant' | 'operation' | 'clientKey'>): string {
  // Newline-separated: tenant and operation never contain one, and the client key (printable ASCII) cannot either.
  return createHash('sha256').update(`${key.tenant}\n${key.operation}\n${key.clientKey}`).digest('hex');
}

export function tombstoneId(scope: string, fingerprint: Fingerprint): string {
  return `${scope}:${fingerprint.algorithm}:${fingerprint.value}`;
}

/**
 * The tombstone of a final answer, kept `tombstoneSeconds` past the
 * record's retention. A record whose subject was erased while it was in
 * flight finishes with its keyed fingerprint and no subject, and leaves a
 * tombstone of that form: erasing a customer never reopens their keys.
 */
export function tombstoneFor(
  key: FinishedKey,
  response: Pick<IdempotentResponse, 'status' | 'headers'>,
  finishedAt: Date,
  retainUntil: Date,
  tombstoneSeconds: number,
): Tombstone {
  const scope = tombstoneScope(key);
  return {
    _id: tombstoneId(scope, key.fingerprint),
    scope,
    fingerprint: key.fingerprint,
    status: response.status,
    location: response.headers['location'] ?? null,
    finishedAt,
    subject: key.subject,
    expiresAt: new Date(retainUntil.getTime() + tombstoneSeconds * 1000),
  };
}

/**
 * What an erasure leaves of a tombstone: the same scope, answer and expiry,
 * the fingerprint keyed (no oracle for the body without the digest key) and
 * no subject. A late retry of the erased request is still refused: exactly-
 * once holds for the customers who asked to be forgotten too.
 */
export function erasedTombstone(tombstone: Tombstone, digestKey: Buffer): Tombstone {
  const fingerprint = erasedFingerprint(tombstone.fingerprint, digestKey);
  return { ...tombstone, _id: tombstoneId(tombstone.scope, fingerprint), fingerprint, subject: null };
}

/**
 * A request whose key is absent or past retention. Only the exact request
 * that was answered before is refused (it would run - and charge - twice);
 * another body under the same key is a new request, as the draft allows.
 * The TTL monitor runs about once a minute, so a tombstone past its own
 * expiry may still be there: expiry is enforced here, not by the index.
 */
export function decideLateRetry(tombstone: Tombstone | null, fingerprint: RequestFingerprint, now: Date): LateRetryDecision {
  if (!tombstone || tombstone.expiresAt.getTime() <= now.getTime()) return 'new_request';
  return sameFingerprint(tombstone.fingerprint, fingerprint) ? 'answer_expired' : 'new_request';
}

/**
 * The stable answer to a late retry: 409 `idempotency_key_expired`, with the
 * original resource in Location, so a client that lost the first answer can
 * still find what it created. Sending the same body again is refused for as
 * long as the tombstone lives; a new key is a new request.
 */
export function expiredKeyResponse(tombstone: Tombstone): IdempotentResponse {
  const body = problem(
    409,
    'idempotency_key_expired',
    'This Idempotency-Key and body were already answered and the stored response is past retention; the request was not repeated. Use a new key to repeat it.',
    {
      originalStatus: tombstone.status,
      finishedAt: tombstone.finishedAt.toISOString(),
      ...(tombstone.location ? { location: tombstone.location } : {}),
    },
  );
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (tombstone.location) headers['location'] = tombstone.location;
  return { status: 409, headers, body: JSON.stringify(body) };
}

/**
 * The tombstone check, made only where a key is about to be claimed afresh
 * (absent, or finished and past retention): a replay or a conflict on a live
 * record never pays for it, and a new key costs one read by _id. The read
 * names every form this request's tombstone may have: the current
 * fingerprint algorithm and the older one a record may have finished under,
 * each plain or keyed by an erasure.
 */
@Injectable()
export class LateRetries {
  constructor(
    private readonly tombstones: TombstoneRepository,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
  ) {}

  /** The 409 answer for a late retry of an answered request, or null when the request is new. */
  async answer(request: IdempotentRequest): Promise<IdempotentResult | null> {
    const scope = tombstoneScope(request);
    const ids = storedForms(request.fingerprint).map((form) => tombstoneId(scope, form));
    const found = await this.metrics.timeStore('tombstone_lookup', () => this.tombstones.findByIds(ids));
    const now = this.clock.now();
    const tombstone = found.find((candidate) => decideLateRetry(candidate, request.fingerprint, now) === 'answer_expired');
    if (!tombstone) return null;
    this.metrics.lateRetry(request.operation);
    // Not a replay (the stored bytes are gone). Idempotency-Expires: until then this key and body stay refused.
    return { response: expiredKeyResponse(tombstone), replayed: false, keyExpiresAt: tombstone.expiresAt };
  }
}
