import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { randomBytes } from 'node:crypto';
import { IdempotentMessages, SubjectDigests } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { CloudEvent } from '../outbox/cloud-event.js';
import { EventSubscriber, type DeliveredEvent, type Subscription } from '../outbox/event-subscriber.port.js';
import { DeliveryWorkflow } from './delivery-workflow.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { deliveryId, deliveryPayload, subscribes, type WebhookDelivery, type WebhookEndpoint } from './webhook-endpoint.js';
import { WebhookEndpointRepository } from './webhook-endpoint.repository.js';
import { WebhookSubjectRepository } from './webhook-subject.repository.js';

/** The durable consumer's name: every instance subscribes under it and they share the stream. */
export const DISPATCHER_CONSUMER = 'webhook-dispatcher';
const MAX_BATCH = 100;
/** Backoff between two tries to subscribe (the broker unreachable, or the consumer not created): 1 s doubling to 30 s. */
const resubscribeDelayMs = (attempt: number) => Math.min(30_000, 1000 * 2 ** (attempt - 1));

/**
 * The stream's consumer for outgoing webhooks. For each event, one delivery
 * per enabled endpoint of its tenant subscribed to its type, written in one
 * transaction with the consumer's inbox records (IdempotentMessages): a
 * redelivered event creates nothing new, and a batch is one transaction.
 * It only records; the DeliveryWorkflow sends, so the stream is acked
 * without waiting for any merchant's server.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WebhookDispatcher');
  private subscription: Subscription | null = null;
  private stopped = false;

  constructor(
    private readonly subscriber: EventSubscriber,
    private readonly messages: IdempotentMessages,
    private readonly endpoints: WebhookEndpointRepository,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly workflow: DeliveryWorkflow,
    private readonly subjects: WebhookSubjectRepository,
    private readonly digests: SubjectDigests,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    @Inject(outgoingWebhooksConfig.KEY) private readonly config: OutgoingWebhooksConfig,
  ) {}

  /**
   * Subscribes in the background. On JetStream the subscription waits for the broker, and the service must not:
   * with the broker down at boot it starts degraded (creates go on, events wait in the outbox), and awaiting the
   * subscription here held the boot until the broker came back.
   */
  onApplicationBootstrap(): void {
    this.stopped = false;
    void this.subscribeUntilStopped();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.subscription?.stop();
  }

  private async subscribeUntilStopped(): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt++) {
      try {
        const subscription = await this.subscriber.subscribe(DISPATCHER_CONSUMER, (batch) => this.record(batch), { maxBatch: MAX_BATCH });
        if (this.stopped) return await subscription.stop();
        this.subscription = subscription;
        if (attempt > 1) this.logger.log(`subscribed to the event stream as ${DISPATCHER_CONSUMER}`);
        return;
      } catch (error) {
        if (this.stopped) return;
        const delayMs = resubscribeDelayMs(attempt);
        this.logger.warn(`not subscribed to the event stream yet: ${(error as Error).message}; trying again in ${delayMs / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
      }
    }
  }

  /** One batch from the stream; resolves once its deliveries are committed (then the transport acks it). */
  async record(batch: DeliveredEvent[]): Promise<void> {
    const redelivered = batch.filter((delivered) => delivered.redeliveries > 0).length;
    if (redelivered > 0) this.metrics.outgoingWebhookRedeliveries.inc({ kind: 'redelivered' }, redelivered);
    const outcome = await this.messages.handleBatch(
      DISPATCHER_CONSUMER,
      batch.map((delivered) => delivered.event),
      (session, events) => this.createDeliveries(session, events),
    );
    if (outcome.duplicates.length > 0) this.metrics.outgoingWebhookRedeliveries.inc({ kind: 'duplicate' }, outcome.duplicates.length);
    if (outcome.handled.length > 0) this.workflow.kick();
  }

  /**
   * The deliveries of a batch, in its transaction. Two rules come before them:
   * - An event older than the horizon (WebhookSubjectRepository.horizonMs) is not delivered:
   *   both records that would stop a second sending may be gone (a consumer recreated at the stream's start), and
   *   so may an erasure's mark. Merchants get no month-old event twice.
   * - The stream holds each event as it was published, customer id included. One that happened before its
   *   customer's erasure goes out with a pseudonym (the erasure rewrote the deliveries it found; these come later).
   */
  private async createDeliveries(session: ClientSession, events: CloudEvent[]): Promise<void> {
    const now = this.clock.now();
    const current = events.filter((event) => !(Date.parse(event.time) < now.getTime() - this.subjects.horizonMs));
    if (current.length < events.length) {
      this.metrics.outgoingWebhookRedeliveries.inc({ kind: 'past_retention' }, events.length - current.length);
      this.logger.warn(`${events.length - current.length} event(s) older than the retention horizon not delivered (a replayed stream?)`);
    }
    // Each event with the endpoints that want it; events nobody wants cost nothing more.
    const wanted: { event: CloudEvent; endpoints: WebhookEndpoint[]; subject: string }[] = [];
    for (const tenant of new Set(current.map((event) => event.tenant))) {
      const ofTenant = current.filter((event) => event.tenant === tenant);
      const endpoints = await this.endpoints.subscribedTo(session, tenant, [...new Set(ofTenant.map((event) => event.type))]);
      for (const event of ofTenant) {
        const mine = endpoints.filter((candidate) => subscribes(candidate.events, event.type));
        if (mine.length > 0) wanted.push({ event, endpoints: mine, subject: this.subjectOf(event) });
      }
    }
    const named = [...new Set(wanted.map(({ subject }) => subject).filter((subject) => subject !== ''))];
    const erasedAt = await this.subjects.touch(session, named, now);
    const firstAttemptAt = new Date(now.getTime() + this.config.retryScheduleMs[0]);
    const created: WebhookDelivery[] = [];
    for (const { event, endpoints, subject } of wanted) {
      const erased = subject === '' ? null : erasedAt.get(subject);
      const before = erased != null && Date.parse(event.time) <= erased.getTime();
      const body = before ? { ...event, data: { ...event.data, customerId: `erased_${randomBytes(12).toString('hex')}` } } : event;
      for (const endpoint of endpoints) {
        created.push({
          _id: deliveryId(event.id, endpoint._id),
          tenant: event.tenant,
          endpointId: endpoint._id,
          eventId: event.id,
          eventType: event.type,
          payload: deliveryPayload(body),
          subject: before ? '' : subject,
          status: 'pending',
          attempts: [],
          scheduleIndex: 0,
          nextAttemptAt: firstAttemptAt,
          lease: null,
          expiresAt: null,
          createdAt: now,
          updatedAt: now,
        });
      }
    }
    await this.deliveries.insertAbsent(session, created);
  }

  /** The keyed digest of the customer the event names, '' when it names none. */
  private subjectOf(event: CloudEvent): string {
    const customerId = (event.data as { customerId?: unknown } | undefined)?.customerId;
    return typeof customerId === 'string' && customerId !== '' && !customerId.startsWith('erased_')
      ? this.digests.of(event.tenant, customerId)
      : '';
  }
}
