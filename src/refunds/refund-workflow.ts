import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import {
  DuplicateClaimError,
  IdempotencyAttempts,
  type IdempotentResponse,
  type Lease,
  problem,
  PROBLEM_CONTENT_TYPE,
  TransactionRunner,
} from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import { refundJournal } from '../ledger/journal.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { REFUNDABLE_STATES } from '../orders/order-state.js';
import { OrderRepository } from '../orders/order.repository.js';
import { OrderNotFoundError } from '../orders/orders.errors.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { PaymentGateway, type OperationResult, type ProviderOperation, type RefusalReason } from '../payments/payment-gateway.port.js';
import { chargeKeyFor } from '../payments/payment.js';
import { REFUND_FAILURE, refundIdForClaim, refundKeyFor, type Refund, type RefundFailure, type RefundReason } from './refund.js';
import { RefundRepository } from './refund.repository.js';
import { refundLocation, refundView } from './refund.view.js';
import { OrderNotRefundableError, RefundExceedsCapturedError, RefundsInFlightError } from './refunds.errors.js';
// refund_declined's guidance (stored with the 402) comes from the app's table.

/**
 * `request`: the client (or an internal caller) is waiting; ask the provider
 * to refund (the derived refund key makes a repeated call return the first
 * refund). `reconcile`: the reaper; never refunds, only asks the provider
 * what was done under the key, and cancels the key when nothing was.
 */
export type RefundAdvanceMode = 'request' | 'reconcile';

/** Shape of `order.refunded`'s payload (the refund view + the order's refundedMinor); bump when it changes. */
export const ORDER_REFUNDED_SCHEMA_VERSION = 1;

/** What a refund's key covers: the order (the route's id) and the body, so one key on two orders is 422. */
export interface RefundBody {
  orderId: string;
  amountMinor: number;
  reason: RefundReason;
}

/**
 * What refundRestByKey's key covers: no amount. The amount is what is left
 * when the claim commits, so a repeat after an abandoned attempt and another
 * refund meanwhile is the same request (the rest), never a 422.
 */
export interface RestBody {
  orderId: string;
  amountMinor: 'rest';
  reason: RefundReason;
}

/**
 * The one code path that moves a refund to a final state, used by the first
 * request, by a retry that takes over, and by the reaper:
 *   T0 (begin, inside the claim transaction): the order's refundable amount reserved + the pending refund
 *   provider refund (between transactions, keyed by the refund)
 *   T1  succeeded: record complete (201) + refund succeeded + order refunded amount + reversal journal + order.refunded
 *   T1' refused:   record failed (402/422 stored) + refund failed + reservation released
 *   canceled (the reaper found nothing under the key and canceled it): refund failed `abandoned`,
 *       reservation released, record failed with no response (a retry is a new refund, new provider key)
 * Fence first: the first write of each transaction is the compare-and-set on
 * our lease. A journal or event already there exactly as this attempt would
 * write it (a half-applied earlier attempt) is adopted; anything else under
 * those ids is a DuplicateClaimError for a human.
 */
@Injectable()
export class RefundWorkflow {
  constructor(
    private readonly refunds: RefundRepository,
    private readonly orders: OrderRepository,
    private readonly gateway: PaymentGateway,
    private readonly ledger: LedgerService,
    private readonly outbox: OutboxService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
    private readonly clock: Clock,
    private readonly faults: FaultInjector,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Inside the claim transaction: one conditional update reserves the amount
   * on the order's refundableMinor (never a read-then-check), so racing
   * refunds cannot sum past the captured amount. When it matches nothing,
   * the error thrown here aborts the claim: no record, no refund, the key
   * unused.
   */
  async begin(session: ClientSession, tenant: string, body: RefundBody | RestBody, lease: Lease): Promise<void> {
    const now = this.clock.now();
    const amountMinor = body.amountMinor === 'rest' ? await this.restOf(session, tenant, body.orderId) : body.amountMinor;
    const order = await this.orders.reserveRefund(session, tenant, body.orderId, amountMinor, now);
    if (!order) throw await this.refusal(session, tenant, body.orderId);
    const refundId = refundIdForClaim(lease.claimId);
    await this.refunds.insertPending(session, {
      _id: refundId,
      tenant,
      orderId: order._id,
      amountMinor,
      currency: order.currency,
      reason: body.reason,
      state: 'pending',
      failureReason: null,
      providerKey: refundKeyFor(refundId),
      providerRefundId: null,
      idempotency: { recordId: lease.recordId, attempt: lease.attempt },
      stateHistory: { pending: now },
      createdAt: now,
      updatedAt: now,
    });
  }

  /**
   * What is left to refund, read in the claim transaction (the reservation
   * that follows is conditional on it, and a concurrent reservation is a
   * write conflict that reruns the transaction). Only on final money: a
   * reservation of another refund in flight may still come back.
   */
  private async restOf(session: ClientSession, tenant: string, orderId: string): Promise<number> {
    const order = await this.orders.findById(orderId, session);
    if (!order || order.tenant !== tenant) throw new OrderNotFoundError();
    if (!REFUNDABLE_STATES.includes(order.state)) throw new OrderNotRefundableError(order.state);
    const reserved = order.capturedMinor - order.refundedMinor - order.refundableMinor;
    if (reserved > 0) throw new RefundsInFlightError(reserved);
    if (order.refundableMinor < 1) throw new RefundExceedsCapturedError(0);
    return order.refundableMinor;
  }

  /** Why the reservation matched nothing, as this transaction sees the order. */
  private async refusal(session: ClientSession, tenant: string, orderId: string): Promise<Error> {
    const order = await this.orders.findById(orderId, session);
    if (!order || order.tenant !== tenant) return new OrderNotFoundError();
    if (!REFUNDABLE_STATES.includes(order.state)) return new OrderNotRefundableError(order.state);
    return new RefundExceedsCapturedError(order.refundableMinor);
  }

  async advance(lease: Lease, mode: RefundAdvanceMode): Promise<Refund> {
    const refund = await this.refunds.findById(refundIdForClaim(lease.claimId));
    if (!refund) throw new Error(`No refund for claim ${lease.claimId}: the claim transaction writes both`);
    // Final refunds commit with their record: a pending record never has one.
    if (refund.state !== 'pending') throw new Error(`Refund ${refund._id} is ${refund.state} while its record is pending`);
    const outcome = await this.askProvider(refund, mode);
    this.faults.crashIf('after-refund-provider');
    switch (outcome.outcome) {
      case 'succeeded':
        return this.succeed(refund, lease, outcome.operation);
      case 'refused':
        return this.refuse(refund, lease, outcome.reason);
      // Canceled: a reaper gave this refund key up for dead, so nothing was refunded and nothing ever will be
      // under it. Abandoned - under our lease if we still hold it; if not, the fenced write says so.
      case 'canceled':
        return this.fail(refund, lease, REFUND_FAILURE.abandoned, null);
    }
  }

  private askProvider(refund: Refund, mode: RefundAdvanceMode): Promise<OperationResult> {
    // Cancel rather than just look: a slow worker still holding this key can then never refund under it.
    if (mode === 'reconcile') return this.gateway.operationOrCancel(refund.providerKey);
    return this.gateway.refund({
      refundKey: refund.providerKey,
      chargeKey: chargeKeyFor(refund.orderId),
      amountMinor: refund.amountMinor,
      currency: refund.currency,
    });
  }

  private async succeed(pending: Refund, lease: Lease, operation: ProviderOperation): Promise<Refund> {
    assertSameRefund(pending, operation);
    const now = this.clock.now();
    const succeeded: Refund = {
      ...pending,
      state: 'succeeded',
      providerRefundId: operation.id,
      stateHistory: { ...pending.stateHistory, succeeded: now },
      updatedAt: now,
    };
    const adopted = await this.transactions.run(async (session) => {
      await this.attempts.complete(session, lease, 'succeeded', responseFor(succeeded));
      await this.refunds.markSucceeded(session, pending, operation.id, now);
      const order = await this.orders.applyRefund(session, pending.orderId, pending.amountMinor, now);
      const journal = await this.ledger.post(
        {
          tenant: pending.tenant,
          journalId: `jrn_${pending._id}`,
          orderId: pending.orderId,
          currency: pending.currency,
          lines: refundJournal(pending.amountMinor),
          postedAt: now,
        },
        session,
      );
      const event = await this.outbox.enqueue(
        session,
        {
          id: `evt_${pending._id}_refunded`,
          tenant: pending.tenant,
          type: 'order.refunded',
          aggregateId: pending.orderId,
          schemaVersion: ORDER_REFUNDED_SCHEMA_VERSION,
          payload: { ...refundView(succeeded), refundedMinor: order.refundedMinor },
        },
        now,
      );
      return [journal === 'adopted' && 'journal', event === 'adopted' && 'outbox event'].filter((what): what is string => !!what);
    });
    // Counted once the transaction committed (its body may have run more than once).
    for (const document of adopted) this.metrics.adoptedDocuments.inc({ what: document });
    return succeeded;
  }

  /** A refusal is final at the provider (the same key answers the same): stored and replayed. */
  private refuse(pending: Refund, lease: Lease, reason: RefusalReason): Promise<Refund> {
    const failure = failureFor(reason);
    return this.fail(pending, lease, failure, responseFor({ ...pending, state: 'failed', failureReason: failure }));
  }

  private async fail(pending: Refund, lease: Lease, reason: RefundFailure, response: IdempotentResponse | null): Promise<Refund> {
    const now = this.clock.now();
    await this.transactions.run(async (session) => {
      await this.attempts.fail(session, lease, 'failed', response);
      await this.refunds.markFailed(session, pending, reason, now);
      // Only with the refund's own move out of pending (fenced above): a reservation is given back once.
      await this.orders.releaseRefund(session, pending.orderId, pending.amountMinor, now);
    });
    return { ...pending, state: 'failed', failureReason: reason, stateHistory: { ...pending.stateHistory, failed: now }, updatedAt: now };
  }
}

/** What the provider says it refunded under our key must be this refund; anything else is for a human. */
function assertSameRefund(refund: Refund, operation: ProviderOperation): void {
  if (operation.kind === 'refund' && operation.amountMinor === refund.amountMinor && operation.currency === refund.currency) return;
  throw new DuplicateClaimError(
    'provider refund',
    `provider key ${refund.providerKey} holds a ${operation.kind} of ${operation.amountMinor} ${operation.currency}, not a refund of ${refund.amountMinor} ${refund.currency}`,
  );
}

function failureFor(reason: RefusalReason): RefundFailure {
  if (reason === 'declined') return REFUND_FAILURE.declined;
  if (reason === 'exceeds_captured') return REFUND_FAILURE.exceedsCaptured;
  // The rest are capture/void refusals, or no refundable charge under the order's charge key.
  return REFUND_FAILURE.noSuchPayment;
}

/** The response a final refund answers with, stored for replay. */
export function responseFor(refund: Refund): IdempotentResponse {
  if (refund.state === 'succeeded') {
    return {
      status: 201,
      headers: { 'content-type': 'application/json; charset=utf-8', location: refundLocation(refund) },
      body: JSON.stringify(refundView(refund)),
    };
  }
  const ids = { refundId: refund._id, orderId: refund.orderId };
  if (refund.state === 'failed' && refund.failureReason === REFUND_FAILURE.declined) {
    const body = problem(402, 'refund_declined', 'The refund was declined by the card issuer.', ids);
    return { status: 402, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body: JSON.stringify(body) };
  }
  if (refund.state === 'failed' && refund.failureReason !== REFUND_FAILURE.abandoned && refund.failureReason !== null) {
    const detail = `The payment provider refused the refund (${refund.failureReason}).`;
    const body = problem(422, 'refund_refused', detail, { ...ids, reason: refund.failureReason });
    return { status: 422, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body: JSON.stringify(body) };
  }
  throw new Error(`Refund ${refund._id} in state ${refund.state} has no stored response`);
}
