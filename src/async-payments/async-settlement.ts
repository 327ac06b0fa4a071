import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { TransactionRunner } from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { webhooksConfig, type WebhooksConfig } from '../config/config.tokens.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { PaymentGateway, type AsyncPaymentMethod, type Charge } from '../payments/payment-gateway.port.js';
import { chargeKeyFor } from '../payments/payment.js';
import { PaymentsService } from '../payments/payments.service.js';
import { completedEvent } from '../orders/order-workflow.js';
import { FAILURE, ORDER_ID_PATTERN, type Order } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';

/** What the provider says became of an asynchronous charge (by webhook or when asked). */
export type ProviderOutcome = { kind: 'succeeded'; charge: Charge } | { kind: 'failed'; reason: string } | { kind: 'processing' };

/** Why an outcome changes nothing; recorded with the event that carried it. */
export type IgnoredReason =
  /** No order of ours has this charge key. */
  | 'unknown_order'
  /** The order already left `processing` (by another event, or by reconciliation): a late or repeated outcome. */
  | 'already_final'
  /** `processing` again: the order is where the event says, or past it. */
  | 'no_change'
  /** The provider reports an amount or currency other than the order's: left for a human, never applied. */
  | 'amount_mismatch'
  /** The order was settled with the other outcome: a provider inconsistency, left for a human. */
  | 'conflicting_outcome';

/**
 * The decision for one outcome, made from reads only, so that the caller can
 * make its own first write (the inbox row) before any effect:
 *  - `settle`: the order is `processing` and the outcome moves it on;
 *  - `ignore`: nothing to change (why: the reason);
 *  - `not_ready`: the order is still `pending` - its own request has not
 *    recorded the provider's `processing` answer yet; try again later.
 */
export type SettlementPlan =
  | { action: 'settle'; order: Order; outcome: Exclude<ProviderOutcome, { kind: 'processing' }> }
  | { action: 'ignore'; order: Order | null; reason: IgnoredReason }
  | { action: 'not_ready'; order: Order };

/**
 * What asking the provider did to a `processing` order: settled it
 * (`succeeded`, `declined`, `canceled`), found it settled already
 * (`skipped`), or left it processing because the provider cannot cancel it:
 * `still_processing` within its method's bound, `past_bound` beyond it
 * (alerted: a human looks at it).
 */
export type ResolveResult = 'succeeded' | 'declined' | 'canceled' | 'skipped' | 'still_processing' | 'past_bound';

/** An order past its method's bound that still cannot be canceled is asked about again this often. */
export const PAST_BOUND_RECHECK_MS = 3600 * 1000;

/** `charge:<order id>` (payments/payment.ts chargeKeyFor) back to the order id; null for a key not ours. */
export function orderIdForChargeKey(chargeKey: string): string | null {
  const orderId = chargeKey.startsWith('charge:') ? chargeKey.slice('charge:'.length) : '';
  return ORDER_ID_PATTERN.test(orderId) ? orderId : null;
}

/**
 * The order-side effect of an asynchronous charge's outcome, inside the
 * caller's transaction (the webhook inbox's, or the processing
 * reconciliation's):
 *   processing -> charged -> saved: payment + balanced journal + outbox
 *   `order.completed`, with the ids and content the synchronous path uses
 *   (so either path adopts what the other wrote, never doubles it);
 *   processing -> failed: the provider's reason.
 * Every transition is a conditional update on the state read in this
 * transaction (OrderRepository's fence): a concurrent settlement makes one
 * of the two transactions fail and retry, and the retry sees the order final.
 * The idempotency record keeps the 202 it completed with: a retry of the key
 * replays it, and GET /v1/orders/:id shows where the order is now.
 */
@Injectable()
export class AsyncSettlement {
  private readonly logger = new Logger(AsyncSettlement.name);

  constructor(
    private readonly orders: OrderRepository,
    private readonly payments: PaymentsService,
    private readonly ledger: LedgerService,
    private readonly outbox: OutboxService,
    private readonly gateway: PaymentGateway,
    private readonly transactions: TransactionRunner,
    private readonly clock: Clock,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  /**
   * Settles a `processing` order by asking the provider instead of waiting
   * for its webhook (the processing bound; a cancel by key): the charge's
   * outcome, or - still processing - the charge canceled at the provider
   * (processingOrCancel, between transactions), so the order fails knowing
   * no money will move. Applied like a webhook's outcome; `skipped` when a
   * webhook (or another instance) settled it meanwhile. A charge the
   * provider cannot cancel while processing keeps the order `processing`
   * (a cancel by key then finds it so). Only the processing reconciliation
   * (`schedule`) then defers the order's next look: a cancel repeated every
   * minute used to push it an hour out each time, so the reconciliation
   * never saw it again and never counted it `past_bound` for the alert.
   */
  async resolveWithProvider(order: Order, { schedule }: { schedule: boolean }): Promise<ResolveResult> {
    const chargeKey = chargeKeyFor(order._id);
    const found = await this.gateway.processingOrCancel(chargeKey);
    if (found.outcome === 'still_processing') {
      if (schedule) return this.keepWaiting(order, found.method);
      return this.isWithinBound(order, found.method) ? 'still_processing' : 'past_bound';
    }
    const outcome: ProviderOutcome =
      found.outcome === 'succeeded'
        ? { kind: 'succeeded', charge: found.charge }
        : { kind: 'failed', reason: found.outcome === 'declined' ? FAILURE.declined : FAILURE.processingExpired };
    const now = this.clock.now();
    return this.transactions.run(async (session) => {
      const plan = await this.plan(session, chargeKey, outcome);
      if (plan.action !== 'settle') return 'skipped';
      await this.apply(session, plan, now);
      return found.outcome;
    });
  }

  /**
   * The money may still arrive: the order stays `processing`. Its next look
   * is its method's bound (a bank transfer: days); past that, an hour later
   * each time, reported as `past_bound` for the alert.
   */
  private async keepWaiting(order: Order, method: AsyncPaymentMethod): Promise<'still_processing' | 'past_bound'> {
    const within = this.isWithinBound(order, method);
    const next = within ? this.boundOf(order, method) : this.clock.now().getTime() + PAST_BOUND_RECHECK_MS;
    await this.orders.deferProcessingCheck(order._id, new Date(next));
    if (!within)
      this.logger.error({ msg: 'asynchronous charge past its bound and not cancelable; still waiting', orderId: order._id, method });
    return within ? 'still_processing' : 'past_bound';
  }

  private isWithinBound(order: Order, method: AsyncPaymentMethod): boolean {
    return this.clock.now().getTime() < this.boundOf(order, method);
  }

  /** When the order's method stops being given time: since it went `processing`, plus the method's bound. */
  private boundOf(order: Order, method: AsyncPaymentMethod): number {
    const since = (order.stateHistory.processing ?? order.createdAt).getTime();
    return since + (method === 'bank_transfer' ? this.config.processingBoundBankTransferMs : this.config.processingBoundMs);
  }

  /** Orders in `processing` since before `before` and not deferred past now, oldest first (for the processing reconciliation). */
  overdue(before: Date, limit: number): Promise<Order[]> {
    return this.orders.findProcessingSince(before, limit, this.clock.now());
  }

  async plan(session: ClientSession, chargeKey: string, outcome: ProviderOutcome): Promise<SettlementPlan> {
    const orderId = orderIdForChargeKey(chargeKey);
    const order = orderId ? await this.orders.findById(orderId, session) : null;
    if (!order) return { action: 'ignore', order: null, reason: 'unknown_order' };
    if (outcome.kind === 'processing') return { action: 'ignore', order, reason: 'no_change' };
    if (order.state === 'pending') return { action: 'not_ready', order };
    if (order.state !== 'processing') {
      const conflicting = (order.state === 'failed') !== (outcome.kind === 'failed');
      if (conflicting)
        this.logger.error({ msg: 'provider outcome conflicts with the settled order', orderId: order._id, state: order.state });
      return { action: 'ignore', order, reason: conflicting ? 'conflicting_outcome' : 'already_final' };
    }
    if (outcome.kind === 'succeeded' && (outcome.charge.amountMinor !== order.amountMinor || outcome.charge.currency !== order.currency)) {
      this.logger.error({ msg: 'provider charge differs from the order', orderId: order._id });
      return { action: 'ignore', order, reason: 'amount_mismatch' };
    }
    return { action: 'settle', order, outcome };
  }

  /** The writes of a `settle` plan, in the caller's transaction; returns the order as it is now. */
  async apply(session: ClientSession, plan: Extract<SettlementPlan, { action: 'settle' }>, now: Date): Promise<Order> {
    const { order, outcome } = plan;
    if (outcome.kind === 'failed') {
      await this.orders.markFailed(session, order, outcome.reason, now);
      return {
        ...order,
        state: 'failed',
        failureReason: outcome.reason,
        paymentToken: null,
        stateHistory: { ...order.stateHistory, failed: now },
      };
    }
    const { payment } = await this.payments.recordCharge(session, order.tenant, order._id, outcome.charge, now);
    await this.orders.markCharged(session, order, payment._id, now);
    // markCharged's amounts too: the event's payload is the order as saved.
    const charged: Order = {
      ...order,
      state: 'charged',
      paymentId: payment._id,
      authorizedMinor: order.amountMinor,
      capturedMinor: order.amountMinor,
      refundableMinor: order.amountMinor,
      stateHistory: { ...order.stateHistory, charged: now },
    };
    const saved: Order = { ...charged, state: 'saved', paymentToken: null, stateHistory: { ...charged.stateHistory, saved: now } };
    await this.ledger.postSale(session, {
      tenant: order.tenant,
      orderId: order._id,
      currency: order.currency,
      amountMinor: order.amountMinor,
      postedAt: now,
    });
    await this.outbox.enqueue(session, completedEvent(saved), now);
    await this.orders.markSaved(session, charged, now);
    return saved;
  }
}
