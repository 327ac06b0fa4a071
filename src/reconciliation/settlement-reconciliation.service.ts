import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { PeriodicTask } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { idempotencyConfig, reaperConfig, webhooksConfig, type ReaperConfig } from '../config/config.tokens.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ProviderStatement } from '../payments/provider-statement.port.js';
import type { ReportIdempotencySettings, ReportWebhookSettings } from './report-configuration.js';
import { afterRecheck, compareSettlements, MISMATCH_KINDS, netClearing, type SettlementReport } from './settlement-compare.js';
import { WorkInFlight } from './work-in-flight.js';
import { sleepUnlessAborted } from '../common/sleep.js';

/** The scheduled run covers this much, ending one processing bound ago (by then every settled charge is in the ledger). */
export const SCHEDULED_WINDOW_MS = 24 * 3600 * 1000;
const SCHEDULED_INTERVAL_MS = 3600 * 1000;

/**
 * Settlement reconciliation: the ledger's provider clearing account against
 * the provider's statement for a period, every charge key on either side
 * looked up on the other whenever it fell (a charge at 23:59 posted at
 * 00:01 is not a mismatch). Reports every mismatch (missing in the ledger,
 * missing at the provider, amount differs); the scheduled run also sets
 * `settlement_reconciliation_mismatches{kind}`, which pages
 * (ops/alerts.rules.yml, docs/runbooks/settlement-mismatch.md).
 *
 * Only settled work is compared: a key whose order has money moving (a
 * refund the provider made before our T1 committed, a capture likewise, a
 * create not yet saved) is reported apart as `inFlight` - the reaper
 * finishes it. And a mismatch is read again once, after the reaper's
 * horizon (max(lease, resume window) + its interval), before it is
 * reported, so a commit on its way is never paged as a mismatch.
 */
@Injectable()
export class SettlementReconciliation implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SettlementReconciliation.name);
  private readonly task = new PeriodicTask(() => this.runScheduled());
  /** Ends a re-check wait at shutdown: a pass waiting up to the horizon must not hold the process that long. */
  private readonly closing = new AbortController();

  constructor(
    private readonly ledger: LedgerService,
    private readonly statement: ProviderStatement,
    private readonly work: WorkInFlight,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    @Inject(webhooksConfig.KEY) private readonly webhooks: ReportWebhookSettings,
    @Inject(reaperConfig.KEY) private readonly reaper: ReaperConfig,
    @Inject(idempotencyConfig.KEY) private readonly idempotency: ReportIdempotencySettings,
  ) {}

  /** By then the reaper has finished (or released) any work a crash or a 503 left in flight. */
  get recheckAfterMs(): number {
    return Math.max(this.idempotency.lockTimeoutMs, this.idempotency.resumeWindowMs) + this.reaper.intervalMs;
  }

  onApplicationBootstrap(): void {
    if (this.reaper.enabled) this.task.start(SCHEDULED_INTERVAL_MS);
  }

  onApplicationShutdown(): Promise<void> {
    this.closing.abort();
    return this.task.stop();
  }

  async run(from: Date, to: Date): Promise<SettlementReport> {
    if (!(from.getTime() < to.getTime())) throw new RangeError('The period must end after it starts');
    const [settled, posted] = await Promise.all([this.statement.settledBetween(from, to), this.ledger.clearingEntries(from, to)]);
    const keys = new Set([...settled.map((item) => item.chargeKey), ...posted.map((line) => `charge:${line.orderId}`)]);
    const first = await this.compareKeys({ from, to }, [...keys]);
    if (first.mismatches.length === 0) return first;
    await sleepUnlessAborted(this.recheckAfterMs, this.closing.signal);
    return afterRecheck(
      first,
      await this.compareKeys(
        { from, to },
        first.mismatches.map((m) => m.chargeKey),
      ),
    );
  }

  private async compareKeys(period: { from: Date; to: Date }, keys: string[]): Promise<SettlementReport> {
    const orderIds = keys.map((key) => key.replace(/^charge:/, ''));
    // Work in flight read first: a refund that finishes between the reads then shows on both sides or in flight, never half.
    const inFlight = await this.work.among(orderIds);
    const [provider, lines] = await Promise.all([this.statement.settledForKeys(keys), this.ledger.clearingEntriesForOrders(orderIds)]);
    return compareSettlements(period, provider, netClearing(lines), inFlight);
  }

  /** One scheduled pass (also what the metric reflects). */
  runScheduled(): Promise<SettlementReport> {
    const to = new Date(this.clock.now().getTime() - this.webhooks.processingBoundMs);
    return this.run(new Date(to.getTime() - SCHEDULED_WINDOW_MS), to).then((report) => {
      // Shutting down: the re-check was cut short, so this report is not one to page on.
      if (this.closing.signal.aborted) return report;
      for (const kind of MISMATCH_KINDS) this.metrics.settlementMismatches.set({ kind }, report.counts[kind]);
      this.metrics.settlementLastRun.set(Date.now() / 1000);
      if (report.inFlight.length > 0) this.logger.log({ msg: 'settlement differences in flight', inFlight: report.inFlight.length });
      if (report.mismatches.length > 0) {
        this.logger.error({ msg: 'settlement mismatches', from: report.from, to: report.to, counts: report.counts });
      }
      return report;
    });
  }
}
