import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { PeriodicTask } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { reaperConfig, webhooksConfig, type ReaperConfig, type WebhooksConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AsyncSettlement } from './async-settlement.js';

export interface ProcessingRun {
  examined: number;
  succeeded: number;
  declined: number;
  canceled: number;
  /** Settled meanwhile by a webhook (or another instance): nothing to do. */
  skipped: number;
  /** The provider cannot cancel it while processing: kept waiting until its method's bound (PROCESSING_BOUND_BANK_TRANSFER_MS). */
  still_processing: number;
  /** Past its method's bound and still not cancelable: kept waiting, counted for the alert (ProcessingPastBoundUncancelable). */
  past_bound: number;
  error: number;
}

/**
 * The bound on `processing`: the webhook that settles an asynchronous
 * charge may never come, so every pass takes the orders in `processing`
 * longer than PROCESSING_BOUND_MS and asks the provider by charge key
 * (processingOrCancel, between transactions): its outcome is applied
 * through the same AsyncSettlement as a webhook's, and a charge still
 * processing is canceled at the provider first, so the order fails
 * (`processing_expired`) knowing no money will move - where the provider
 * can cancel it. One it cannot cancel while processing (a bank transfer)
 * stays `processing`: not looked at again before its method's bound
 * (PROCESSING_BOUND_BANK_TRANSFER_MS), and past that hourly, each time
 * counted as `past_bound` (the alert ProcessingPastBoundUncancelable).
 * A webhook racing this
 * is harmless: the order's fenced transitions let one of them settle it and
 * the other finds it final. Runs where the reaper runs (REAPER_ENABLED).
 */
@Injectable()
export class ProcessingReconciler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ProcessingReconciler.name);
  private readonly task = new PeriodicTask(() => this.sweep());

  constructor(
    private readonly settlement: AsyncSettlement,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
    @Inject(reaperConfig.KEY) private readonly reaper: ReaperConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.reaper.enabled) this.task.start(this.config.reconcileIntervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  /** One pass; never two at once in one process (other instances: the fenced transitions). */
  runOnce(): Promise<ProcessingRun> {
    return this.task.runOnce();
  }

  private async sweep(): Promise<ProcessingRun> {
    const run: ProcessingRun = {
      examined: 0,
      succeeded: 0,
      declined: 0,
      canceled: 0,
      skipped: 0,
      still_processing: 0,
      past_bound: 0,
      error: 0,
    };
    const before = new Date(this.clock.now().getTime() - this.config.processingBoundMs);
    const deadline = Date.now() + this.reaper.timeBudgetMs;
    for (const order of await this.settlement.overdue(before, this.reaper.batchSize)) {
      if (Date.now() >= deadline) break;
      run.examined++;
      try {
        const result = await this.settlement.resolveWithProvider(order, { schedule: true });
        run[result]++;
        this.metrics.processingReconciled.inc({ result });
      } catch (error) {
        run.error++;
        this.metrics.processingReconciled.inc({ result: 'error' });
        this.logger.warn({ msg: 'processing order not reconciled; next pass', orderId: order._id, error: (error as Error).name });
      }
    }
    return run;
  }
}
