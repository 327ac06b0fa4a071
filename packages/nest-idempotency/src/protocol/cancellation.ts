import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock, IdempotencyMetrics } from '../ports.js';
import { CacheUnavailableError, IdempotencyLeaseActiveError, LeaseLostError } from '../errors.js';
import { IdempotencyFastPath } from '../fast-path/fast-path.js';
import { IdempotencyRecordRepository, leaseOf, RecordRaceLostError } from '../store/record.repository.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { isWriteConflict } from '../store/mongo-errors.js';
import { deriveClaimId, scopeKey } from './ids.js';
import { newLease, ownRecord, type IdempotencyRecord, type Lease, type RecordCancellation } from './record.js';
import { retryAfterSeconds } from './timing.js';

/** What a cancel is about: one attempt of the key (its claim id names the consumer's resources). */
export interface CancelTarget {
  tenant: string;
  operation: string;
  clientKey: string;
  recordId: string;
  attempt: number;
  claimId: string;
  /**
   * The key of the undo's own idempotent operation (orders: the refund key):
   * derived from the record, so every repeat of this cancel sends the same one
   * and the undo happens once.
   */
  undoKey: string;
}

/** Where the key stands once nothing of it is in flight any more. */
export type CancelSituation =
  /** No record (`attempt` null), or an attempt abandoned before this cancel (failed, nothing stored): nothing took effect. */
  | { state: 'never_run'; attempt: CancelTarget | null }
  /** This cancel stopped the attempt in flight (the canceler's stop) and it ended with nothing taken effect. */
  | { state: 'stopped'; attempt: CancelTarget }
  /** The attempt finished with a stored answer (before this cancel, or when the stop found the effect done): undo it. */
  | { state: 'answered'; attempt: CancelTarget; responseStatus: number; location: string | null };

/** What the consumer's undo did: stored on the record and answered to every repeat of the cancel. */
export interface CancelSettlement {
  /** The consumer's word for it (orders: never_run, canceled_before_charge, refunded, nothing_to_undo). */
  outcome: string;
  /** What the key created, if anything: the 409's Location from now on. */
  location?: string | null;
  /** Ids to name the undo by (orders: orderId, refundId). */
  references?: Record<string, string>;
}

/**
 * A consumer's undo of one operation, registered with
 * IdempotencyCancellation.register(operation, canceler).
 */
export interface Canceler {
  /**
   * The attempt was in flight: this cancel took its lease by force (its
   * worker is fenced from now on). Drive the attempt to a final state
   * without any new side effect - cancel at the provider what may still be
   * pending (orders: the reaper's chargeOrCancel) - and finish the record
   * with IdempotencyAttempts.complete/fail under `lease`, exactly as a
   * reconciler does. Throwing leaves the record pending (the lease given
   * back): the cancel fails and its repeat tries again.
   */
  stop(lease: Lease): Promise<void>;
  /**
   * Nothing is in flight: undo what took effect, if anything (orders: a full
   * refund keyed with `attempt.undoKey`), and say what was done. Must be
   * idempotent: a cancel that failed after it (the record not yet canceled)
   * calls it again with the same situation.
   */
  settle(situation: CancelSituation): Promise<CancelSettlement>;
  /**
   * Optional: a finished cancel's stored answer as it stands now, for each
   * repeat. The undo's money may move after the cancel finished (orders: a
   * card refund the provider fails days later); the consumer then says so
   * in the outcome. Reads only: the record, and the key's canceled state,
   * never change.
   */
  current?(view: CancellationView, tenant: string): Promise<CancellationView>;
}

/** The answer to a cancel, the same on every repeat. */
export interface CancellationView {
  key: string;
  operation: string;
  status: 'canceled';
  outcome: string;
  location: string | null;
  references: Record<string, string>;
  requestedAt: Date;
  canceledAt: Date;
}

/** A canceled key that never had a request: no body was ever fingerprinted (decide() answers it before any fingerprint check). */
const NO_BODY = { algorithm: 'canceled', value: '' } as const;

const MAX_ROUNDS = 6;

/** The undo key of one attempt: deterministic, and no id of the key in clear. */
export function undoKeyFor(recordId: string, createdAt: Date, attempt: number): string {
  return `cnl_${createHash('sha256')
    .update(`cancel\n${deriveClaimId(recordId, createdAt, attempt)}`)
    .digest('hex')
    .slice(0, 32)}`;
}

/**
 * Cancel by key: what a client does when it lost the answer and wants the
 * operation undone rather than retried. The key becomes `canceled` for good
 * (until its retention, record TTL + tombstone period, ends): every later
 * request under it, whatever the body, gets 409 idempotency_key_canceled.
 * Before that, the consumer's canceler stops an attempt in flight (the lease
 * taken by force) and undoes a finished one. Idempotent: a repeat answers
 * the same view and does nothing again; a cancel that failed halfway (the
 * undo's provider down) is finished by its repeat.
 */
@Injectable()
export class IdempotencyCancellation {
  private readonly logger = new Logger(IdempotencyCancellation.name);
  private readonly cancelers = new Map<string, Canceler>();

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly transactions: TransactionRunner,
    private readonly fastPath: IdempotencyFastPath,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  /** Plugs a consumer's undo of `operation` in (like IdempotencyReaper.register); one per operation. */
  register(operation: string, canceler: Canceler): void {
    this.cancelers.set(operation, canceler);
  }

  /** Whether `operation` can be canceled by key (a canceler is registered). */
  cancelable(operation: string): boolean {
    return this.cancelers.has(operation);
  }

  /**
   * Cancels the tenant's key for `operation`. Throws IdempotencyLeaseActiveError
   * (409 + Retry-After) while another cancel of the key is running, and
   * whatever the canceler throws (the cancel is then repeated).
   */
  async cancel(tenant: string, operation: string, clientKey: string): Promise<CancellationView> {
    const canceler = this.cancelers.get(operation);
    if (!canceler) throw new Error(`No canceler registered for operation "${operation}"`);
    const recordId = scopeKey({ tenant, operation, clientKey, service: this.config.serviceName });
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const record = ownRecord(await this.metrics.timeStore('cancel_lookup', () => this.records.findById(recordId)), {
        tenant,
        operation,
        clientKey,
      });
      const view = await this.onRecord(record, recordId, { tenant, operation, clientKey }, canceler).catch((error: unknown) => {
        // Someone changed the record first (a claim, a finish, a repeat of this cancel): read it again.
        if (error instanceof RecordRaceLostError || error instanceof LeaseLostError || isWriteConflict(error)) return null;
        throw error;
      });
      if (view) return view;
    }
    throw new IdempotencyLeaseActiveError(1, 'The key changed under the cancel several times in a row; retry the cancel.');
  }

  /** One step of the cancel; a view when the record is canceled, null to read it again. */
  private async onRecord(
    record: IdempotencyRecord | null,
    recordId: string,
    key: Pick<CancelTarget, 'tenant' | 'operation' | 'clientKey'>,
    canceler: Canceler,
  ): Promise<CancellationView | null> {
    if (!record) return this.cancelNeverRun(recordId, key, canceler);
    if (record.status === 'canceled') return canceler.current ? canceler.current(viewOf(record), record.tenant) : viewOf(record);
    if (!record.cancellation) {
      const lease = await this.request(record);
      // In flight: the lease this cancel just took by force; the attempt is stopped under it.
      if (lease) await this.stop(record, lease, canceler);
      return null;
    }
    if (record.status === 'pending') {
      await this.stop(record, await this.leaseLeft(record), canceler);
      return null;
    }
    const settlement = await canceler.settle(situationOf(record));
    return this.finish(record, settlement);
  }

  /** No record: a record born canceled takes the key's id, so no claim can insert it later. */
  private async cancelNeverRun(
    recordId: string,
    key: Pick<CancelTarget, 'tenant' | 'operation' | 'clientKey'>,
    canceler: Canceler,
  ): Promise<CancellationView> {
    const settlement = await canceler.settle({ state: 'never_run', attempt: null });
    const now = this.clock.now();
    const retainUntil = this.retention(now, this.config.ttlSeconds);
    const record: IdempotencyRecord = {
      _id: recordId,
      ...key,
      status: 'canceled',
      fingerprint: { ...NO_BODY },
      schemaVersion: 1,
      ttlSeconds: this.config.ttlSeconds,
      attempt: 1,
      lease: null,
      recoveryPoint: null,
      subject: null,
      response: null,
      conflict: null,
      cancellation: cancellationOf(now, now, settlement, false),
      createdAt: now,
      updatedAt: now,
      finishedAt: now,
      expiresAt: retainUntil,
      purgeAt: retainUntil,
    };
    await this.metrics.timeStore('cancel', () => this.transactions.run((session) => this.records.insertCanceled(session, record)));
    return viewOf(record);
  }

  /**
   * The cancel's first write: from it on the key answers 409 canceled. A
   * pending record's lease is taken by force in the same write. Cached
   * answers of the key are fenced off in Redis first (fails closed: 503,
   * nothing written), so none is replayed once the key is canceled.
   */
  private async request(record: IdempotencyRecord): Promise<Lease | null> {
    const now = this.clock.now();
    const retainUntil = this.retention(now, record.ttlSeconds);
    await this.guardCached(record._id, retainUntil);
    const pending = record.status === 'pending';
    const cancellation: RecordCancellation = {
      requestedAt: now,
      canceledAt: null,
      outcome: null,
      location: null,
      references: {},
      stoppedInFlight: pending,
    };
    const lease = pending ? newLease(now, this.config.lockTimeoutMs) : null;
    const requested = await this.metrics.timeStore('cancel_request', () =>
      this.transactions.run((session) => this.records.requestCancel(session, record, cancellation, lease)),
    );
    return lease ? leaseOf(requested, lease) : null;
  }

  /** The attempt in flight, stopped by the canceler under the cancel's lease; given back when the stop fails. */
  private async stop(record: IdempotencyRecord, lease: Lease, canceler: Canceler): Promise<void> {
    try {
      await canceler.stop(lease);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) {
        await this.records.release(lease, this.clock.now()).catch(() => false);
        this.logger.warn({ msg: 'cancel could not stop the attempt in flight', recordId: record._id, error: (error as Error).message });
      }
      throw error;
    }
  }

  /**
   * A record an earlier cancel marked and left pending: that cancel is still
   * stopping it (a live lease: 409, retry shortly), or it died or failed
   * (the lease expired or was given back): take it over and stop it here.
   */
  private async leaseLeft(record: IdempotencyRecord): Promise<Lease> {
    const now = this.clock.now();
    const held = record.lease;
    if (held && held.expiresAt.getTime() > now.getTime()) {
      throw new IdempotencyLeaseActiveError(
        retryAfterSeconds(held.expiresAt, now),
        'A cancel of this key is in progress; retry it shortly.',
      );
    }
    const taken = await this.records.takeOver(record, newLease(now, this.config.lockTimeoutMs));
    if (!taken) throw new RecordRaceLostError(record._id);
    return taken;
  }

  private async finish(record: IdempotencyRecord, settlement: CancelSettlement): Promise<CancellationView> {
    const now = this.clock.now();
    const cancellation = cancellationOf(record.cancellation!.requestedAt, now, settlement, record.cancellation!.stoppedInFlight);
    const retainUntil = new Date(Math.max(record.expiresAt.getTime(), this.retention(now, record.ttlSeconds).getTime()));
    const canceled = await this.metrics.timeStore('cancel_finish', () =>
      this.transactions.run((session) => this.records.finishCancel(session, record, cancellation, retainUntil)),
    );
    return viewOf(canceled);
  }

  /** A canceled key is kept as long as a finished key's tombstone: record TTL + tombstone period. */
  private retention(now: Date, ttlSeconds: number): Date {
    return new Date(now.getTime() + (ttlSeconds + this.config.tombstoneSeconds) * 1000);
  }

  private async guardCached(recordId: string, expiresAt: Date): Promise<void> {
    try {
      await this.fastPath.guardRecords([{ recordId, expiresAt }]);
    } catch (error) {
      if (!(error instanceof CacheUnavailableError)) throw error;
      throw new CacheUnavailableError("The key's cached answers could not be marked in Redis; nothing was canceled yet. Retry the cancel.");
    }
  }
}

function cancellationOf(requestedAt: Date, canceledAt: Date, settlement: CancelSettlement, stoppedInFlight: boolean): RecordCancellation {
  return {
    requestedAt,
    canceledAt,
    outcome: settlement.outcome,
    location: settlement.location ?? null,
    references: { ...settlement.references },
    stoppedInFlight,
  };
}

/** A final record marked by a cancel, as the canceler's settle() sees it. */
export function situationOf(record: IdempotencyRecord): CancelSituation {
  const attempt: CancelTarget = {
    tenant: record.tenant,
    operation: record.operation,
    clientKey: record.clientKey,
    recordId: record._id,
    attempt: record.attempt,
    claimId: deriveClaimId(record._id, record.createdAt, record.attempt),
    undoKey: undoKeyFor(record._id, record.createdAt, record.attempt),
  };
  if (record.response) {
    return { state: 'answered', attempt, responseStatus: record.response.status, location: record.response.headers?.['location'] ?? null };
  }
  return record.cancellation?.stoppedInFlight ? { state: 'stopped', attempt } : { state: 'never_run', attempt };
}

/** The view of a canceled record (the same on every repeat of the cancel). */
export function viewOf(record: IdempotencyRecord): CancellationView {
  const cancellation = record.cancellation!;
  return {
    key: record.clientKey,
    operation: record.operation,
    status: 'canceled',
    outcome: cancellation.outcome ?? 'never_run',
    location: cancellation.location,
    references: { ...cancellation.references },
    requestedAt: cancellation.requestedAt,
    canceledAt: cancellation.canceledAt ?? record.updatedAt,
  };
}
