import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { PeriodicTask } from './periodic-task.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IdempotencyClock, IdempotencyMetrics } from '../ports.js';
import { IdempotencyAttempts } from '../protocol/attempts.js';
import { DuplicateClaimError, LeaseLostError } from '../errors.js';
import { newLease, type IdempotencyRecord, type Lease } from '../protocol/record.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';

/** What a consumer did with a stale attempt: finished it, or failed it because nothing was charged. */
export type ReconcileDecision = 'completed' | 'abandoned';

/**
 * A consumer's recovery for one operation: given the lease on a stale
 * pending record, drive the attempt to a final state (and finish the record
 * through IdempotencyAttempts.complete/fail) without any new side effect it
 * cannot verify - orders asks the provider, it never charges from here.
 */
export type Reconciler = (lease: Lease) => Promise<ReconcileDecision>;

export interface ReaperRun {
  examined: number;
  completed: number;
  abandoned: number;
  lost_lease: number;
  error: number;
  skipped: number;
}

export type ReaperDecision = keyof Omit<ReaperRun, 'examined'>;

/**
 * Finds pending records whose lease expired (their worker died or stalled),
 * takes each lease by compare-and-set - safe with any number of instances
 * running it - and hands it to the operation's reconciler. Bounded per run
 * by `reaper.batchSize` and `reaper.timeBudgetMs`.
 */
@Injectable()
export class IdempotencyReaper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(IdempotencyReaper.name);
  private readonly reconcilers = new Map<string, Reconciler>();
  private readonly task: PeriodicTask<ReaperRun>;

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly attempts: IdempotencyAttempts,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {
    this.task = new PeriodicTask(() => this.sweep());
  }

  /** Whether an operation has a reconciler. */
  has(operation: string): boolean {
    return this.reconcilers.has(operation);
  }

  register(operation: string, reconciler: Reconciler): void {
    this.reconcilers.set(operation, reconciler);
  }

  onApplicationBootstrap(): void {
    if (this.config.reaper.enabled) this.task.start(this.config.reaper.intervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  /** One pass. Never two at once in one process; other instances are kept out by the lease CAS. */
  runOnce(): Promise<ReaperRun> {
    return this.task.runOnce();
  }

  private async sweep(): Promise<ReaperRun> {
    const run: ReaperRun = { examined: 0, completed: 0, abandoned: 0, lost_lease: 0, error: 0, skipped: 0 };
    const deadline = Date.now() + this.config.reaper.timeBudgetMs;
    this.metrics.reaperRun();
    try {
      // Only operations someone can reconcile: others would fill every batch and starve the rest.
      const operations = [...this.reconcilers.keys()];
      for (const record of await this.records.findStale(operations, this.clock.now(), this.config.reaper.batchSize)) {
        if (Date.now() >= deadline) break;
        run.examined++;
        const decision = await this.reap(record, { honourResumeWindow: true });
        run[decision]++;
        this.metrics.reaperRecord(decision);
      }
      const oldest = await this.records.oldestPendingCreatedAt(this.clock.now());
      this.metrics.oldestPendingAge(oldest ? (this.clock.now().getTime() - oldest.getTime()) / 1000 : 0);
    } catch (error) {
      this.logger.warn(`Reaper pass failed: ${(error as Error).message}`);
    }
    return run;
  }

  /**
   * Reaps one stale record now; the lease CAS still decides who wins. The
   * scheduled pass honours a resume window opened after it listed the
   * record; the admin API's release is a person's decision to reap now.
   */
  async reap(record: IdempotencyRecord, options: { honourResumeWindow?: boolean } = {}): Promise<ReaperDecision> {
    const reconcile = this.reconcilers.get(record.operation);
    if (!reconcile) {
      this.logger.warn({ msg: 'no reconciler for operation', operation: record.operation });
      return 'skipped';
    }
    const lease = await this.records.takeOver(record, newLease(this.clock.now(), this.config.lockTimeoutMs), {
      outsideResumeWindow: options.honourResumeWindow,
    });
    if (!lease) return 'lost_lease';
    const context = { recordId: lease.recordId, operation: record.operation, attempt: lease.attempt, recoveryPoint: lease.recoveryPoint };
    try {
      const decision = await reconcile(lease);
      this.logger.log({ msg: 'reaped stale record', decision, ...context });
      return decision;
    } catch (error) {
      if (error instanceof LeaseLostError) return 'lost_lease';
      if (error instanceof DuplicateClaimError) await this.attempts.reportConflict(lease, record.operation, error);
      this.logger.error({ msg: 'reaper could not reconcile', error: (error as Error).message, ...context });
      await this.records.release(lease, this.clock.now()).catch(() => false);
      return 'error';
    }
  }
}
