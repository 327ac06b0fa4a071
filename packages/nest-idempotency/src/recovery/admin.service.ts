import { Injectable } from '@nestjs/common';
import { IdempotencyClock } from '../ports.js';
import { IdempotencyKeyNotFoundError, IdempotencyLeaseActiveError, IdempotencyOperationRequiredError } from '../errors.js';
import type { IdempotencyRecord } from '../protocol/record.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import { IdempotencyReaper, type ReaperDecision } from './reaper.js';
import { retryAfterSeconds } from '../protocol/timing.js';

/** What an operator may see of a record: never the stored body. */
export function recordView(record: IdempotencyRecord) {
  return {
    operation: record.operation,
    schemaVersion: record.schemaVersion,
    status: record.status,
    attempt: record.attempt,
    recoveryPoint: record.recoveryPoint,
    lease: record.lease ? { lockedAt: record.lease.lockedAt, expiresAt: record.lease.expiresAt } : null,
    responseStatus: record.response?.status ?? null,
    // What the key created: the stored response's Location (never its body), or what a cancel named.
    location: record.response?.headers?.['location'] ?? record.cancellation?.location ?? null,
    // Why this attempt cannot finish on its own (a document it would write exists with other content).
    conflict: record.conflict ? { what: record.conflict.what, detail: record.conflict.detail, at: record.conflict.at } : null,
    // A cancel of the key: requested (canceledAt null while its undo runs) or done, with what it did.
    cancellation: record.cancellation
      ? {
          requestedAt: record.cancellation.requestedAt,
          canceledAt: record.cancellation.canceledAt,
          outcome: record.cancellation.outcome,
        }
      : null,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt,
  };
}

/** The tenant's own view of its keys, for support and on-call (docs/runbooks/stuck-pending-keys.md). */
@Injectable()
export class IdempotencyAdminService {
  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly reaper: IdempotencyReaper,
    private readonly clock: IdempotencyClock,
  ) {}

  /** The key's records, oldest first; `location` is the first stored Location among them (for the Location header), or null. */
  async describe(tenant: string, clientKey: string) {
    const records = await this.records.findByClientKey(tenant, clientKey);
    if (records.length === 0) throw new IdempotencyKeyNotFoundError();
    const views = records.map(recordView);
    return { key: clientKey, location: views.find((view) => view.location !== null)?.location ?? null, records: views };
  }

  /**
   * Hands a pending record whose lease expired to the reaper now, instead of
   * waiting for its next pass. A live lease is refused: someone is working on it.
   */
  async release(tenant: string, clientKey: string, operation?: string): Promise<{ decision: ReaperDecision }> {
    const pending = (await this.records.findByClientKey(tenant, clientKey)).filter(
      (candidate) => candidate.status === 'pending' && (operation === undefined || candidate.operation === operation),
    );
    if (pending.length === 0) throw new IdempotencyKeyNotFoundError();
    if (pending.length > 1) throw new IdempotencyOperationRequiredError();
    const [record] = pending;
    const now = this.clock.now();
    if (record.lease && record.lease.expiresAt > now) {
      throw new IdempotencyLeaseActiveError(retryAfterSeconds(record.lease.expiresAt, now));
    }
    return { decision: await this.reaper.reap(record) };
  }
}
