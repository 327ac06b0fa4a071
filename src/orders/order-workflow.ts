import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import {
  IdempotencyAttempts,
  type IdempotentResponse,
  type Lease,
  problem,
  PROBLEM_CONTENT_TYPE,
  TransactionRunner,
} from '@idempotent-orders/nest-idempotency';
import { LedgerService } from '../ledger/ledger.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { PaymentGateway, type Authorization, type Charge } from '../payments/payment-gateway.port.js';
import { chargeKeyFor, paymentIdFor } from '../payments/payment.js';
import { PaymentsService } from '../payments/payments.service.js';
import { isCreateInProgress } from './order-state.js';
import { FAILURE, orderIdForClaim, type Order } from './order.js';
import { OrderRepository } from './order.repository.js';
import { orderView } from './order.view.js';
// card_declined's guidance (stored with the 402) comes from the app's table.

/**
 * `request`: the client is waiting; charge the card (the derived charge key
 * makes a repeated call return the first charge).
 * `reconcile`: the reaper; never charges, only asks the provider whether a
 * charge exists, and abandons the order when none does.
 */
export type AdvanceMode = 'request' | 'reconcile';

type ChargeOutcome =
  | { kind: 'charged'; charge: Charge }
  /** Manual capture: the provider holds the amount; the create answers 201 `authorized`. */
  | { kind: 'authorized'; authorization: Authorization }
  | { kind: 'declined' }
  /** Asynchronous method: the provider answers later; the create answers 202 `processing`. */
  | { kind: 'processing' }
  | { kind: 'none' };

/**
 * The one code path that moves an order to a final state, used by the first
 * request, by a retry that takes over, and by the reaper:
 *   pending -> charge (between transactions) -> T1: payment + charged + checkpoint
 *   charged -> T2: journal + outbox + saved + record complete
 * Fence first: the first write of every transaction is the compare-and-set
 * on our lease, so a worker that lost the lease aborts before touching
 * anything. A payment, journal or event that already exists exactly as this
 * attempt would write it (same deterministic id, same content: a
 * half-applied earlier attempt, whatever the cause) is adopted and the order
 * moves on; anything else under those ids is a DuplicateClaimError, which
 * the idempotency layer counts, notes on the record and pages about.
 */
@Injectable()
export class OrderWorkflow {
  constructor(
    private readonly orders: OrderRepository,
    private readonly gateway: PaymentGateway,
    private readonly payments: PaymentsService,
    private readonly ledger: LedgerService,
    private readonly outbox: OutboxService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
    private readonly clock: Clock,
    private readonly faults: FaultInjector,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * `claimed`: the pending order this very attempt's claim transaction wrote
   * (committed), so the read that starts any other advance is skipped: a
   * store command fewer per create (issue 47). Nothing read here could be
   * newer: the fields the charge uses (id, amount, currency, token, capture)
   * never change on a pending order, every transition below is fenced on the
   * lease and on the order's state in the store, and T2 reads the order again
   * for what it stores (an erasure meanwhile). Ignored unless it is this
   * lease's order.
   */
  async advance(lease: Lease, mode: AdvanceMode, claimed?: Order): Promise<Order> {
    const known = claimed && isClaimedBy(claimed, lease) ? claimed : null;
    let order = known ?? (await this.orders.findById(orderIdForClaim(lease.claimId)));
    if (!order) throw new Error(`No order for claim ${lease.claimId}: the claim transaction writes both`);
    while (isCreateInProgress(order.state)) {
      order = order.state === 'pending' ? await this.settlePayment(order, lease, mode) : await this.save(order, lease);
    }
    return order;
  }

  private async settlePayment(order: Order, lease: Lease, mode: AdvanceMode): Promise<Order> {
    const outcome = await this.chargeOrReconcile(order, lease, mode);
    if (outcome.kind === 'none') return this.fail(order, lease, FAILURE.abandoned);
    if (outcome.kind === 'declined') return this.fail(order, lease, FAILURE.declined);
    if (outcome.kind === 'authorized') return this.authorize(order, lease, outcome.authorization);
    if (outcome.kind === 'processing') return this.awaitProvider(order, lease);
    this.faults.crashIf('after-charge');
    const now = this.clock.now();
    const { charged, adopted } = await this.transactions.run(async (session) => {
      await this.attempts.checkpoint(session, lease, 'charged');
      const recorded = await this.payments.recordCharge(session, order.tenant, order._id, outcome.charge, now);
      await this.orders.markCharged(session, order, recorded.payment._id, now);
      const next: Order = {
        ...order,
        state: 'charged',
        paymentId: recorded.payment._id,
        stateHistory: { ...order.stateHistory, charged: now },
      };
      return { charged: next, adopted: recorded.adopted ? ['payment'] : [] };
    });
    this.countAdopted(adopted);
    this.faults.crashIf('after-charged');
    return charged;
  }

  private async chargeOrReconcile(order: Order, lease: Lease, mode: AdvanceMode): Promise<ChargeOutcome> {
    const chargeKey = chargeKeyFor(order._id);
    if (mode === 'reconcile') {
      // Cancel rather than just look: a slow worker still holding this key can then never charge it.
      const found = await this.gateway.chargeOrCancel(chargeKey);
      switch (found.outcome) {
        case 'charged':
          return { kind: 'charged', charge: found.charge };
        case 'authorized':
          return { kind: 'authorized', authorization: found.authorization };
        case 'declined':
          return { kind: 'declined' };
        case 'processing':
          return { kind: 'processing' };
        case 'canceled':
          return { kind: 'none' };
      }
    }
    if (!order.paymentToken) throw new Error(`Order ${order._id} is pending without a payment token`);
    const request = {
      chargeKey,
      amountMinor: order.amountMinor,
      currency: order.currency,
      paymentToken: order.paymentToken,
      reference: order._id,
    };
    if (order.capture === 'manual') {
      // Same key space as a charge: a resumed attempt gets the first authorization back.
      const authorized = await this.gateway.authorize(request);
      if (authorized.outcome === 'authorized') return { kind: 'authorized', authorization: authorized.authorization };
      return authorized.outcome === 'declined' ? { kind: 'declined' } : { kind: 'none' };
    }
    const result = await this.gateway.charge(request);
    switch (result.outcome) {
      case 'succeeded':
        return { kind: 'charged', charge: result.charge };
      case 'declined':
        return { kind: 'declined' };
      case 'processing':
        return { kind: 'processing' };
      // Canceled: a reaper gave this charge key up for dead. Nothing was charged, so the attempt is
      // abandoned - under our lease if we still hold it; if not, the fenced write says so.
      case 'canceled':
        return { kind: 'none' };
    }
  }

  /**
   * Manual capture, one transaction: the record completes with the 201 of
   * the authorized order, the payment of the authorization is written (or
   * adopted) and the order becomes authorized. No journal: no money moved
   * yet (the capture posts it).
   */
  private async authorize(pending: Order, lease: Lease, authorization: Authorization): Promise<Order> {
    this.faults.crashIf('after-charge');
    const now = this.clock.now();
    const { authorized, adopted } = await this.transactions.run(async (session) => {
      const order = await this.current(pending, session);
      const next: Order = {
        ...order,
        state: 'authorized',
        paymentId: paymentIdFor(authorization.id),
        authorizedMinor: order.amountMinor,
        authorizationExpiresAt: authorization.expiresAt,
        paymentToken: null,
        stateHistory: { ...order.stateHistory, authorized: now },
      };
      await this.attempts.complete(session, lease, 'authorized', responseFor(next));
      const recorded = await this.payments.recordAuthorization(session, order.tenant, order._id, authorization, now);
      await this.orders.markAuthorized(session, order, recorded.payment._id, authorization.expiresAt, now);
      return { authorized: next, adopted: recorded.adopted ? ['payment'] : [] };
    });
    this.countAdopted(adopted);
    return authorized;
  }

  private async save(charged: Order, lease: Lease): Promise<Order> {
    const now = this.clock.now();
    const { saved, adopted } = await this.transactions.run(async (session) => {
      const order = await this.current(charged, session);
      const next: Order = { ...order, state: 'saved', paymentToken: null, stateHistory: { ...order.stateHistory, saved: now } };
      await this.attempts.complete(session, lease, 'saved', responseFor(next));
      const journal = await this.ledger.postSale(session, {
        tenant: order.tenant,
        orderId: order._id,
        currency: order.currency,
        amountMinor: order.amountMinor,
        postedAt: now,
      });
      const event = await this.outbox.enqueue(session, completedEvent(next), now);
      await this.orders.markSaved(session, order, now);
      const adopted = [journal === 'adopted' && 'journal', event === 'adopted' && 'outbox event'].filter((what): what is string => !!what);
      return { saved: next, adopted };
    });
    this.countAdopted(adopted);
    return saved;
  }

  /**
   * The provider answers later (by webhook, or when the processing
   * reconciliation asks): T1 moves the order to `processing` and completes
   * the key with the 202, which a retry of the key replays. The outcome
   * moves the order on through AsyncSettlement, outside any lease.
   */
  private async awaitProvider(pending: Order, lease: Lease): Promise<Order> {
    const now = this.clock.now();
    return this.transactions.run(async (session) => {
      const order = await this.current(pending, session);
      const processing: Order = { ...order, state: 'processing', stateHistory: { ...order.stateHistory, processing: now } };
      await this.attempts.complete(session, lease, 'processing', responseFor(processing));
      await this.orders.markProcessing(session, order, now);
      return processing;
    });
  }

  /** Declined: stored and replayed (402). Abandoned: no response stored, a retry starts a new attempt. */
  private async fail(pending: Order, lease: Lease, reason: string): Promise<Order> {
    const now = this.clock.now();
    return this.transactions.run(async (session) => {
      const order = await this.current(pending, session);
      const failed: Order = {
        ...order,
        state: 'failed',
        failureReason: reason,
        paymentToken: null,
        stateHistory: { ...order.stateHistory, failed: now },
      };
      await this.attempts.fail(session, lease, 'failed', reason === FAILURE.declined ? responseFor(failed) : null);
      await this.orders.markFailed(session, order, reason, now);
      return failed;
    });
  }

  /** Counted once the transaction committed (its body may have run more than once). */
  private countAdopted(what: string[]): void {
    for (const document of what) this.metrics.adoptedDocuments.inc({ what: document });
  }

  /**
   * The order as this transaction sees it: what gets stored for replay and
   * published must reflect changes made while we were charging (an erasure).
   */
  private async current(order: Order, session: ClientSession): Promise<Order> {
    return (await this.orders.findById(order._id, session)) ?? order;
  }
}

/** The pending order written by this lease's claim: same record, attempt and claim. */
function isClaimedBy(order: Order, lease: Lease): boolean {
  return (
    order.state === 'pending' &&
    order._id === orderIdForClaim(lease.claimId) &&
    order.idempotency.recordId === lease.recordId &&
    order.idempotency.attempt === lease.attempt
  );
}

/** Shape of `order.completed`'s payload (the order view); bump when it changes. */
export const ORDER_COMPLETED_SCHEMA_VERSION = 2;

/** `order.completed` of a saved order, with the id every path that saves it uses (so the others adopt it). */
export function completedEvent(saved: Order) {
  return {
    id: `evt_${saved._id}_completed`,
    tenant: saved.tenant,
    type: 'order.completed',
    aggregateId: saved._id,
    schemaVersion: ORDER_COMPLETED_SCHEMA_VERSION,
    payload: orderView(saved),
  };
}

/** The response a final order answers with, stored for replay. */
export function responseFor(order: Order): IdempotentResponse {
  // A manual capture's create answers with the authorization as an automatic one does with the charge.
  if (order.state === 'saved' || order.state === 'authorized') {
    return {
      status: 201,
      headers: { 'content-type': 'application/json; charset=utf-8', location: `/v1/orders/${order._id}` },
      body: JSON.stringify(orderView(order)),
    };
  }
  if (order.state === 'processing') {
    // Accepted, not done: the order's URL says how it ends (saved or failed) once the provider has answered.
    return {
      status: 202,
      headers: { 'content-type': 'application/json; charset=utf-8', location: `/v1/orders/${order._id}` },
      body: JSON.stringify(orderView(order)),
    };
  }
  if (order.state === 'failed' && order.failureReason === FAILURE.declined) {
    const body = problem(402, 'card_declined', 'The card was declined.', { orderId: order._id });
    return { status: 402, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body: JSON.stringify(body) };
  }
  throw new Error(`Order ${order._id} in state ${order.state} has no stored response`);
}
