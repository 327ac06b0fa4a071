import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PeriodicTask } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { afterAttempt, isSuccess } from './delivery-schedule.js';
import { EndpointSecrets } from './endpoint-secrets.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import type { DeliveryAttempt, WebhookDelivery, WebhookEndpoint } from './webhook-endpoint.js';
import { WebhookEndpointRepository } from './webhook-endpoint.repository.js';
import { WebhookSender, type SendOutcome } from './webhook-sender.js';

/**
 * Sends the recorded deliveries: every pass claims the due ones (a lease by
 * compare-and-set, so two instances never attempt one delivery at once) and
 * starts their attempts without awaiting them, within two caps: per endpoint
 * (one slow endpoint fills only its own slots) and overall. An attempt that
 * dies with its process leaves its lease to expire; the delivery is then
 * attempted again with the same `webhook-id`.
 */
@Injectable()
export class DeliveryWorkflow implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorkflow.name);
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly perEndpoint = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly task = new PeriodicTask(() => this.pass(), DeliveryWorkflow.name);
  private stopped = false;
  private idlePasses = 0;
  private passing = false;
  private kickedDuringPass = false;

  constructor(
    @Inject(outgoingWebhooksConfig.KEY) private readonly config: OutgoingWebhooksConfig,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly endpoints: WebhookEndpointRepository,
    private readonly secrets: EndpointSecrets,
    private readonly sender: WebhookSender,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    this.task.start(this.config.pollIntervalMs);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.task.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** A pass now (new deliveries are attempted at once, not at the next tick); during a pass, another right after it. */
  kick(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.kickedDuringPass = true;
      return;
    }
    this.task.runOnce().catch((error: unknown) => this.logger.warn({ msg: 'delivery pass failed', error: String(error) }));
  }

  /** One pass: how many attempts it started. */
  async pass(): Promise<number> {
    this.passing = true;
    try {
      return await this.claimAndStart();
    } finally {
      this.passing = false;
      // A kick while this pass ran may name deliveries its query was too early to see: another pass right after.
      if (this.kickedDuringPass) {
        this.kickedDuringPass = false;
        setImmediate(() => this.kick());
      }
    }
  }

  private async claimAndStart(): Promise<number> {
    const free = this.config.maxConcurrency - this.inFlight.size;
    const now = this.clock.now();
    // Endpoints at their share are left out of the window: one endpoint's backlog (a merchant whose server hangs,
    // a thousand due) filled it oldest first, and every other tenant's deliveries waited behind it.
    const full = [...this.perEndpoint].filter(([, sending]) => sending >= this.config.perEndpointConcurrency).map(([id]) => id);
    const due = free > 0 ? await this.deliveries.due(now, free * 4, full) : [];
    // Counted when there is work, and every 15th idle pass: an idle service costs the store one query per pass.
    if (due.length > 0 || ++this.idlePasses % 15 === 0) this.metrics.outgoingWebhookPending.set(await this.deliveries.countPending());
    // The oldest due of all, also when the window left some out (workers all busy, endpoints at their share): the
    // lag alert reads this, and it read 0 exactly while the workers were saturated.
    const oldest = free > 0 && full.length === 0 ? due[0] : (await this.deliveries.due(now, 1))[0];
    this.metrics.outgoingWebhookOldestDue.set(oldest ? Math.max(0, (now.getTime() - oldest.nextAttemptAt!.getTime()) / 1000) : 0);
    let started = 0;
    for (const delivery of due) {
      if (this.stopped || this.inFlight.size >= this.config.maxConcurrency) break;
      if ((this.perEndpoint.get(delivery.endpointId) ?? 0) >= this.config.perEndpointConcurrency) continue;
      // Held past one attempt's deadline: a live attempt is never taken over, a dead one is soon after.
      const until = new Date(now.getTime() + 2 * this.config.timeoutMs + 1000);
      if (!(await this.deliveries.claim(delivery, this.owner, now, until))) continue;
      this.start(delivery);
      started++;
    }
    return started;
  }

  /** Resolves when every attempt started so far has been recorded (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private start(delivery: WebhookDelivery): void {
    this.perEndpoint.set(delivery.endpointId, (this.perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const attempt: Promise<void> = this.attempt(delivery)
      .catch((error: unknown) => this.logger.warn({ msg: 'delivery attempt not recorded', deliveryId: delivery._id, error: String(error) }))
      .finally(() => {
        const left = (this.perEndpoint.get(delivery.endpointId) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(delivery.endpointId, left);
        else this.perEndpoint.delete(delivery.endpointId);
        this.inFlight.delete(attempt);
      });
    this.inFlight.add(attempt);
  }

  private async attempt(delivery: WebhookDelivery): Promise<void> {
    const endpoint = await this.endpoints.findById(delivery.endpointId);
    const at = this.clock.now();
    const gone = !endpoint || endpoint.status !== 'enabled';
    const secrets = gone ? [] : this.signingSecrets(endpoint, at);
    const outcome: Omit<SendOutcome, 'error'> & { error: SendOutcome['error'] | 'secret_unavailable' } = gone
      ? { httpStatus: null, error: null, durationMs: 0 }
      : secrets.length > 0
        ? await this.sender.send({ url: endpoint.url, id: delivery.eventId, payload: delivery.payload, secrets }, at)
        : // No configured key opens its secret (a retired encryption key dropped too soon): a failed attempt, recorded
          // and retried on the schedule like any other, never an unsigned request.
          { httpStatus: null, error: 'secret_unavailable', durationMs: 0 };
    const succeeded = !gone && isSuccess(outcome.httpStatus);
    const record: DeliveryAttempt = {
      at,
      httpStatus: outcome.httpStatus,
      durationMs: outcome.durationMs,
      error: gone ? 'endpoint_gone' : outcome.error,
    };
    // A deleted or disabled endpoint gets nothing more: the delivery ends failed (a manual retry sends it once re-enabled).
    const next = gone
      ? { status: 'failed' as const, nextAttemptAt: null, scheduleIndex: delivery.scheduleIndex }
      : afterAttempt(delivery.scheduleIndex, succeeded, this.config.retryScheduleMs, this.clock.now());
    const expiresAt = next.status === 'pending' ? null : new Date(at.getTime() + this.config.retentionMs);
    const recorded = await this.deliveries.recordAttempt(delivery, this.owner, { attempt: record, ...next, expiresAt });
    if (recorded === 'lost') return;
    this.observe(record, succeeded, recorded === 'retry_requested' ? 'pending' : next.status);
    if (recorded === 'retry_requested') this.kick();
    if (gone) return;
    if (succeeded) await this.endpoints.markHealthy(delivery.endpointId);
    else await this.afterFailure(delivery.endpointId, at);
  }

  /** Every attempt failing since `disableAfterMs` ago: the endpoint is disabled, and says why. */
  private async afterFailure(endpointId: string, at: Date): Promise<void> {
    await this.endpoints.markFailing(endpointId, at);
    const before = new Date(at.getTime() - this.config.disableAfterMs);
    if (await this.endpoints.disableIfFailingSince(endpointId, before, this.clock.now())) {
      this.metrics.outgoingWebhookEndpointsDisabled.inc();
      this.logger.warn({ msg: 'webhook endpoint disabled: every attempt failed', endpointId, failingSinceBefore: before.toISOString() });
    }
  }

  /** The current secret, and a rotated-out one during its overlap: those a configured key opens. */
  private signingSecrets(endpoint: WebhookEndpoint, at: Date): string[] {
    return endpoint.secrets
      .filter((s) => s.expiresAt === null || s.expiresAt > at)
      .flatMap((s) => {
        try {
          return [this.secrets.open(s.sealed, endpoint._id)];
        } catch (error) {
          this.logger.error({ msg: 'webhook endpoint secret unreadable', endpointId: endpoint._id, error: String(error) });
          return [];
        }
      });
  }

  private observe(attempt: DeliveryAttempt, succeeded: boolean, status: string): void {
    const result = succeeded ? 'success' : (attempt.error ?? 'http_error');
    this.metrics.outgoingWebhookAttempts.inc({ result });
    this.metrics.outgoingWebhookDuration.observe(attempt.durationMs / 1000);
    if (status !== 'pending') this.metrics.outgoingWebhookDeliveries.inc({ outcome: status });
  }
}
