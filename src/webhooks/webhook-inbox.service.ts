import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { TransactionRunner } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AsyncSettlement, type ProviderOutcome } from '../async-payments/async-settlement.js';
import { FAILURE } from '../orders/order.js';
import { RefundFailure } from '../refunds/refund-failure.js';
import type { InboxEvent, InboxOutcome } from './inbox-event.js';
import { EventAlreadyReceivedError, InboxEventRepository } from './inbox-event.repository.js';
import { REFUND_FAILED_EVENT, type PaymentEvent, type RefundEventData } from './payment-event.js';
import { WebhookNotReadyError } from './webhooks.errors.js';

/** What the inbox did with one delivery (the webhook's 200 body). */
export interface InboxReceipt {
  eventId: string;
  /** True when the event was already in the inbox: this delivery changed nothing. */
  duplicate: boolean;
  outcome: InboxOutcome;
  reason: string | null;
  orderId: string | null;
}

/** Seconds a provider should wait before delivering an event that came before its order was ready. */
const NOT_READY_RETRY_AFTER_SECONDS = 1;

/**
 * The idempotent consumer of provider events. Each event is applied exactly
 * once: its id goes into the inbox (unique _id) as the first write of the
 * transaction that makes its effect, so the effect commits if and only if
 * the row does. A second delivery finds the row (a read before the
 * transaction, for the common case) or fails on the unique id inside it (two
 * deliveries at once: one commits, the other's transaction aborts with
 * nothing written) and is answered as a duplicate. A failure anywhere rolls
 * back row and effect together, and the provider's retry starts clean.
 * Out of order: an event older (by the charge's sequence) than one already
 * applied is recorded as `stale`; the order's state machine refuses the rest.
 */
@Injectable()
export class WebhookInbox {
  constructor(
    private readonly events: InboxEventRepository,
    private readonly settlement: AsyncSettlement,
    private readonly transactions: TransactionRunner,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
    private readonly refundFailure: RefundFailure,
  ) {}

  async receive(event: PaymentEvent): Promise<InboxReceipt> {
    const known = await this.events.findById(event.id);
    if (known) return this.duplicate(known);
    try {
      const receipt = await this.transactions.run((session) => this.record(session, event));
      this.metrics.webhookEvents.inc({ type: metricType(event.type), outcome: receipt.outcome });
      if (event.refund && receipt.outcome === 'applied') this.refundFailure.counted();
      return receipt;
    } catch (error) {
      if (!(error instanceof EventAlreadyReceivedError)) throw error;
      const winner = await this.events.findById(event.id);
      if (!winner) throw error;
      return this.duplicate(winner);
    }
  }

  private async record(session: ClientSession, event: PaymentEvent): Promise<InboxReceipt> {
    const now = this.clock.now();
    const row: InboxEvent = {
      _id: event.id,
      type: event.type,
      chargeKey: event.charge?.chargeKey ?? null,
      sequence: event.charge?.sequence ?? null,
      occurredAt: event.occurredAt,
      receivedAt: now,
      outcome: 'unknown_type',
      reason: null,
      orderId: null,
      tenant: null,
    };
    if (event.refund) return this.recordRefundFailure(session, event.refund, row, now);
    if (!event.charge) {
      await this.events.insert(session, row);
      return receiptOf(row, false);
    }
    const plan = await this.settlement.plan(session, event.charge.chargeKey, outcomeOf(event));
    if (plan.action === 'not_ready') throw new WebhookNotReadyError(NOT_READY_RETRY_AFTER_SECONDS);
    row.orderId = plan.order?._id ?? null;
    row.tenant = plan.order?.tenant ?? null;
    const stale =
      plan.action === 'settle' && (await this.events.lastAppliedSequence(session, event.charge.chargeKey)) >= event.charge.sequence;
    if (plan.action === 'ignore' || stale) {
      row.outcome = 'ignored';
      row.reason = plan.action === 'ignore' ? plan.reason : 'stale';
      await this.events.insert(session, row);
      return receiptOf(row, false);
    }
    row.outcome = 'applied';
    // The inbox row first: a concurrent copy of this event aborts here, before any effect.
    await this.events.insert(session, row);
    await this.settlement.apply(session, plan, now);
    return receiptOf(row, false);
  }

  /** A refund the provider failed after it succeeded (refunds/refund-failure.ts): the same inbox-row-first protocol. */
  private async recordRefundFailure(session: ClientSession, failure: RefundEventData, row: InboxEvent, now: Date): Promise<InboxReceipt> {
    const plan = await this.refundFailure.plan(session, failure);
    if (plan.action === 'not_ready') throw new WebhookNotReadyError(NOT_READY_RETRY_AFTER_SECONDS);
    row.orderId = plan.refund?.orderId ?? null;
    row.tenant = plan.refund?.tenant ?? null;
    if (plan.action === 'ignore') {
      row.outcome = 'ignored';
      row.reason = plan.reason;
      await this.events.insert(session, row);
      return receiptOf(row, false);
    }
    row.outcome = 'applied';
    await this.events.insert(session, row);
    await this.refundFailure.apply(session, plan.refund, now);
    return receiptOf(row, false);
  }

  private duplicate(known: InboxEvent): InboxReceipt {
    this.metrics.webhookEvents.inc({ type: metricType(known.type), outcome: 'duplicate' });
    return receiptOf(known, true);
  }

  /** For tests and the benchmark: the row of an event, as committed. */
  find(eventId: string): Promise<InboxEvent | null> {
    return this.events.findById(eventId);
  }
}

function outcomeOf(event: PaymentEvent): ProviderOutcome {
  const charge = event.charge!;
  if (event.type === 'charge.succeeded') {
    return {
      kind: 'succeeded',
      charge: {
        id: charge.chargeId,
        chargeKey: charge.chargeKey,
        amountMinor: charge.amountMinor,
        currency: charge.currency,
        createdAt: event.occurredAt,
      },
    };
  }
  // The order says why in its own words (the documented failureReason values); the provider's reason is not copied.
  if (event.type === 'charge.failed') return { kind: 'failed', reason: FAILURE.declined };
  return { kind: 'processing' };
}

/** Known types by name; any other is one label value, so a provider cannot grow the series. */
function metricType(type: string): string {
  return ['charge.processing', 'charge.succeeded', 'charge.failed', REFUND_FAILED_EVENT].includes(type) ? type : 'other';
}

function receiptOf(row: InboxEvent, duplicate: boolean): InboxReceipt {
  return { eventId: row._id, duplicate, outcome: row.outcome, reason: row.reason, orderId: row.orderId };
}
