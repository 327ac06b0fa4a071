import { Inject, Injectable } from '@nestjs/common';
import { createHmac } from 'node:crypto';
import type { ClientSession } from 'mongoose';
import { IdempotencyIntentInvalidError, PossibleDuplicateError } from '../errors.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock, IdempotencyMetrics } from '../ports.js';
import { DuplicateGuardRepository } from '../store/duplicate-guard.repository.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import type { DuplicateGuardEntry } from '../store/schemas.js';
import type { IdempotencyRecord, Lease } from './record.js';
import { conflictRetryAfterSeconds } from './timing.js';
import type { DuplicateIntent, IdempotentRequest } from './work.js';

export type { DuplicateIntent };

/** The header a client sends to mean a second request with the same body. */
export const IDEMPOTENCY_INTENT_HEADER = 'idempotency-intent';

/**
 * The intent of a request on a route that opted in, undefined on any other
 * route. A header that is present but is not exactly one `new` is refused
 * (400): a client that misspells it would otherwise be refused 409 with no
 * hint why.
 */
export function duplicateIntent(
  optedIn: boolean | undefined,
  headers: Record<string, string | string[] | undefined>,
): DuplicateIntent | undefined {
  if (!optedIn) return undefined;
  const value = headers[IDEMPOTENCY_INTENT_HEADER];
  if (value === undefined) return 'check';
  if (typeof value !== 'string' || value.trim().toLowerCase() !== 'new') throw new IdempotencyIntentInvalidError();
  return 'new';
}

/** Thrown inside the claim transaction when another record holds the body: the claim rolls back, then DuplicateGuard.refuse decides. */
export class DuplicateBodyHeld extends Error {
  constructor(
    readonly request: IdempotentRequest,
    readonly entryId: string,
    readonly now: Date,
  ) {
    super('Another request holds this body in the duplicate guard');
    this.name = 'DuplicateBodyHeld';
  }
}

/**
 * The guard against clients that mint a new Idempotency-Key per retry
 * (IdempotencyModuleOptions.duplicateGuard, `@Idempotent({ duplicateGuard })`).
 * Decided inside the claim transaction: the claim of a guarded request
 * writes one document keyed by (tenant, operation, body), so two requests
 * with one body under two keys write the same `_id` and cannot both commit;
 * the later one finds the first holding the body and is refused 409
 * `possible_duplicate`, its own claim rolled back. A retry of the same key
 * never gets here (it replays, or resumes under its own record, which
 * holds the body already). One indexed write per guarded claim; a refusal
 * then reads the entry and the earlier record by id, for its Location.
 * An earlier request that had no effect (abandoned, declined) does not
 * block: its entry is released and the claim goes round.
 */
@Injectable()
export class DuplicateGuard {
  constructor(
    private readonly entries: DuplicateGuardRepository,
    private readonly records: IdempotencyRecordRepository,
    private readonly clock: IdempotencyClock,
    private readonly metrics: IdempotencyMetrics,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly settings: IdempotencySettings,
  ) {}

  /** In the claim transaction, after the record's write: throws PossibleDuplicateError, or holds the body for this claim. */
  async hold(session: ClientSession, request: IdempotentRequest, lease: Lease): Promise<void> {
    const guard = this.settings.duplicateGuard;
    if (!request.duplicateGuard || !guard || !guard.tenants(request.tenant)) return;
    const now = this.clock.now();
    const entry: DuplicateGuardEntry = {
      _id: this.entryId(request),
      recordId: lease.recordId,
      tenant: request.tenant,
      operation: request.operation,
      createdAt: now,
      until: new Date(now.getTime() + guard.windowSeconds * 1000),
    };
    // Not checked, but it holds the body: a blind retry of this second request under yet another key is caught.
    if (request.duplicateGuard === 'new') return this.entries.replace(session, entry);
    if (await this.entries.claim(session, entry, now)) return;
    // Another record holds the body; the write that met its key aborted the transaction. Decided after it.
    throw new DuplicateBodyHeld(request, entry._id, now);
  }

  /**
   * After the claim's transaction rolled back on DuplicateBodyHeld (nothing
   * of this request was written): throws PossibleDuplicateError, or returns
   * null to claim again when the earlier request had no effect to duplicate
   * (its entry is released) or its window just ended.
   */
  async refuse(held: DuplicateBodyHeld): Promise<null> {
    const holder = await this.entries.findById(held.entryId);
    if (!holder || holder.until.getTime() <= held.now.getTime()) return null;
    const refusal = this.refusal(await this.records.findById(holder.recordId), held.now);
    if (!refusal) {
      await this.entries.release(holder);
      return null;
    }
    this.metrics.outcome(held.request.operation, 'possible_duplicate');
    throw refusal;
  }

  /**
   * What a duplicate of `earlier` is answered: its Location once it
   * succeeded, Retry-After while it runs; null when it had no effect to
   * duplicate (abandoned, refused as 4xx such as a declined card, expired,
   * or gone), and the body passes to the new request.
   */
  private refusal(earlier: IdempotencyRecord | null, now: Date): PossibleDuplicateError | null {
    if (!earlier) return null;
    if (earlier.status === 'pending')
      return new PossibleDuplicateError(null, conflictRetryAfterSeconds(earlier.lease?.expiresAt ?? null, now));
    if (earlier.expiresAt.getTime() <= now.getTime()) return null;
    const response = earlier.response;
    if (!response || response.status < 200 || response.status >= 300) return null;
    return new PossibleDuplicateError(response.headers.location ?? null);
  }

  /** HMAC of service, tenant, operation and the request's fingerprint: the id names no body and no person. */
  private entryId(request: IdempotentRequest): string {
    const mac = createHmac('sha256', this.settings.digestKey)
      .update(
        `duplicate-guard\n${this.settings.serviceName}\n${request.tenant}\n${request.operation}\n${request.fingerprint.algorithm}:${request.fingerprint.value}`,
      )
      .digest('hex');
    return `${request.tenant}:${request.operation}:${mac}`;
  }
}
