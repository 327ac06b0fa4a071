import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Clock } from '../common/clock.js';
import { PeriodicTask } from '../common/periodic-task.js';
import { idempotencyConfig, reaperConfig, type IdempotencyConfig, type ReaperConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { IdempotencyAttempts } from './idempotency-attempts.js';
import { DuplicateClaimError, LeaseLostError } from './idempotency.errors.js';
import type { IdempotencyRecord, Lease } from './idempotency-record.js';
import { IdempotencyRecordRepository } from './idempotency-record.repository.js';
import { newLease } from './lease.js';

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

const INTERVAL_NAME = 'idempotency-reaper';

/**
 * Finds pending records whose lease expired (their worker died or stalled),
 * takes each lease by compare-and-set - safe with any number of instances
 * running it - and hands it to the operation's reconciler. Bounded per run
 * by REAPER_BATCH_SIZE and REAPER_TIME_BUDGET_MS.
 */
@Injectable()
export class IdempotencyReaper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(IdempotencyReaper.name);
  private readonly reconcilers = new Map<string, Reconciler>();
  private readonly task: PeriodicTask<ReaperRun>;

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly attempts: IdempotencyAttempts,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    scheduler: SchedulerRegistry,
    @Inject(reaperConfig.KEY) private readonly config: ReaperConfig,
    @Inject(idempotencyConfig.KEY) private readonly idempotency: IdempotencyConfig,
  ) {
    this.task = new PeriodicTask(scheduler, INTERVAL_NAME, () => this.sweep());
  }

  register(operation: string, reconciler: Reconciler): void {
    this.reconcilers.set(operation, reconciler);
  }

  onApplicationBootstrap(): void {
    if (this.config.enabled) this.task.start(this.config.intervalMs);
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
    const deadline = Date.now() + this.config.timeBudgetMs;
    this.metrics.reaperRuns.inc();
    try {
      // Only operations someone can reconcile: others would fill every batch and starve the rest.
      const operations = [...this.reconcilers.keys()];
      for (const record of await this.records.findStale(operations, this.clock.now(), this.config.batchSize)) {
        if (Date.now() >= deadline) break;
        run.examined++;
        const decision = await this.reap(record, { honourResumeWindow: true });
        run[decision]++;
        this.metrics.reaperRecords.inc({ decision });
      }
      const oldest = await this.records.oldestPendingCreatedAt(this.clock.now());
      this.metrics.oldestPendingAge.set(oldest ? (this.clock.now().getTime() - oldest.getTime()) / 1000 : 0);
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
    const lease = await this.records.takeOver(record, newLease(this.clock.now(), this.idempotency.lockTimeoutMs), {
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
