import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { IdempotencyClock } from '../ports.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyMetrics } from '../ports.js';
import type { DuplicateClaimError } from '../errors.js';
import type { IdempotentResponse, Lease, StoredResponseDoc } from './record.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import { newLease } from './record.js';
import { StoredResponses } from './stored-responses.js';
import { tombstoneFor } from './tombstones.js';
import { TombstoneRepository } from '../store/tombstone.repository.js';
import { DuplicateGuardRepository } from '../store/duplicate-guard.repository.js';

/**
 * The fenced writes a consumer makes inside its own transactions while it
 * holds a lease. Each is a compare-and-set on the lease owner and throws
 * LeaseLostError when someone took over; make it the first write of the
 * transaction, so a stale worker aborts before touching anything else.
 */
@Injectable()
export class IdempotencyAttempts {
  private readonly logger = new Logger(IdempotencyAttempts.name);

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly responses: StoredResponses,
    private readonly tombstones: TombstoneRepository,
    private readonly guard: DuplicateGuardRepository,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  /** Progress: the recovery point a resumer starts from; also renews the lease. */
  async checkpoint(session: ClientSession, lease: Lease, recoveryPoint: string): Promise<void> {
    if (this.config.bypass) return;
    const renewed = newLease(this.clock.now(), this.config.lockTimeoutMs, lease.owner);
    await this.metrics.timeStore('checkpoint', () => this.records.checkpoint(session, lease, recoveryPoint, renewed));
  }

  /** Success: the response every retry will get. */
  async complete(session: ClientSession, lease: Lease, recoveryPoint: string, response: IdempotentResponse): Promise<void> {
    if (this.config.bypass) return;
    const sealed = this.responses.seal(lease.recordId, lease.schemaVersion, response);
    await this.finish(session, lease, 'complete', recoveryPoint, sealed, response);
  }

  /** Failed for good; with a response it is replayed, without one a retry starts a new attempt. */
  async fail(session: ClientSession, lease: Lease, recoveryPoint: string, response: IdempotentResponse | null): Promise<void> {
    if (this.config.bypass) return;
    const sealed = response ? this.responses.seal(lease.recordId, lease.schemaVersion, response) : null;
    await this.finish(session, lease, 'failed', recoveryPoint, sealed, response);
  }

  /**
   * Gives a claim back as if it was never made: the record is deleted while
   * this lease still holds it (simple mode, a request refused before its
   * handler ran), and with it the duplicate-guard entry the claim took, both
   * in `session`'s transaction. False when the lease was lost first.
   */
  async withdraw(session: ClientSession, lease: Lease): Promise<boolean> {
    if (this.config.bypass) return true;
    return this.metrics.timeStore('withdraw', async () => {
      if (!(await this.records.withdraw(lease, session))) return false;
      await this.guard.releaseRecord(session, lease.recordId);
      return true;
    });
  }

  /**
   * The attempt found a document it would write already there with other
   * content (DuplicateClaimError): it cannot finish by retrying. Counted (it
   * pages), noted on the record for the admin API - the reaper then leaves
   * it to a human - and the lease is given back.
   */
  async reportConflict(lease: Lease, operation: string, error: DuplicateClaimError): Promise<void> {
    this.metrics.stateConflict(operation, error.what);
    this.logger.error({ msg: 'attempt stopped on a conflicting document', operation, recordId: lease.recordId, error: error.message });
    const conflict = { what: error.what, detail: error.detail, at: this.clock.now() };
    await this.records.noteConflict(lease, conflict).catch(() => false);
  }

  /**
   * Retention runs from first use and, at least, from the end: an attempt
   * resumed late in its window is not stored already expired (a lost reply's
   * retry would otherwise run again as a new claim).
   *
   * A final answer leaves a tombstone in the same transaction, so one exists
   * whenever a stored answer does, however the record is later forgotten
   * (replaced or purged). An attempt abandoned without an answer leaves none:
   * nothing took effect, and its retry must run.
   */
  private async finish(
    session: ClientSession,
    lease: Lease,
    status: 'complete' | 'failed',
    recoveryPoint: string,
    sealed: StoredResponseDoc | null,
    response: IdempotentResponse | null,
  ): Promise<void> {
    const now = this.clock.now();
    const retainUntil = new Date(Math.max(lease.keyExpiresAt.getTime(), now.getTime() + lease.ttlSeconds * 1000));
    const key = await this.metrics.timeStore(status, () =>
      this.records.finish(session, lease, status, recoveryPoint, sealed, now, retainUntil),
    );
    if (response) {
      const tombstone = tombstoneFor(key, response, now, retainUntil, this.config.tombstoneSeconds);
      await this.metrics.timeStore('tombstone', () => this.tombstones.write(session, tombstone));
    }
    lease.keyExpiresAt = retainUntil;
    // What the record committed (an erasure may have keyed it since the claim): the fast path caches that, not the request's.
    lease.finishedFingerprint = key.fingerprint;
    lease.finishedAt = now;
  }
}
