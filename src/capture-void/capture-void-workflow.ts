import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import {
  IdempotencyAttempts,
  type IdempotentResponse,
  type Lease,
  LeaseLostError,
  problem,
  PROBLEM_CONTENT_TYPE,
  TransactionRunner,
} from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { PaymentGateway, type OperationResult, type ProviderOperation, type RefusalReason } from '../payments/payment-gateway.port.js';
import { chargeKeyFor } from '../payments/payment.js';
import { PaymentsService } from '../payments/payments.service.js';
import { ORDER_COMPLETED_SCHEMA_VERSION } from '../orders/order-workflow.js';
import type { Order, PendingPaymentAction } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';
import { orderView } from '../orders/order.view.js';
import { type Advanced, FAULTS, FINAL_STATE, providerKeyFor, REFUSALS } from './capture-void.js';
// The refusals' guidance (stored with their problems) comes from the app's table.

/**
 * Capture and void of a manual-capture order, each a keyed operation with
 * the guarantees of a create (orders.capture, orders.void):
 *   T0 (the claim transaction, CaptureVoidService): the order is taken for
 *      this operation by one conditional update (authorized, no other action
 *      in flight) - refused otherwise, with nothing written;
 *   the provider call, between transactions, under a key derived from the
 *      claim (`capture:<claimId>`, `void:<claimId>`): a resumed attempt sends
 *      the same key and gets the first answer;
 *   T1: the record completes (fenced, first write) with the order captured
 *      or voided, the payment settled, the journal of the captured amount
 *      and the outbox event - one transaction. A refusal is stored and
 *      replayed; a key the reaper canceled releases the order and the
 *      record fails without a response (a retry starts a new attempt).
 * The reaper reconciles a stale one by asking the provider for the key
 * (operationOrCancel): never captures or voids from there.
 */
@Injectable()
export class CaptureVoidWorkflow {
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
   * The one code path after the claim, for the request (calls the provider
   * under the derived key) and for the reaper (only asks the provider what
   * that key did, cancelling it when nothing: operationOrCancel).
   */
  async advance(lease: Lease, mode: 'request' | 'reconcile'): Promise<Advanced> {
    const order = await this.orders.findByActionClaim(lease.claimId);
    // Finished or released by whoever took the lease over: the record says what happened.
    if (!order?.pendingAction) throw new LeaseLostError(lease.recordId);
    const action = order.pendingAction;
    const result =
      mode === 'reconcile' ? await this.gateway.operationOrCancel(providerKeyFor(action)) : await this.callProvider(order, action);
    this.faults.crashIf(FAULTS[action.kind].provider);
    switch (result.outcome) {
      case 'succeeded':
        return this.finish(order, action, lease, result.operation);
      case 'refused':
        return this.refuse(order, action, lease, result.reason);
      case 'canceled':
        return this.abandon(order, action, lease);
    }
  }

  private callProvider(order: Order, action: PendingPaymentAction): Promise<OperationResult> {
    const chargeKey = chargeKeyFor(order._id);
    const key = providerKeyFor(action);
    return action.kind === 'capture'
      ? this.gateway.capture({ captureKey: key, chargeKey, amountMinor: action.amountMinor })
      : this.gateway.void({ voidKey: key, chargeKey });
  }

  /** T1 of a success: record, order, payment, journal (capture only) and event, one transaction. */
  private async finish(held: Order, action: PendingPaymentAction, lease: Lease, operation: ProviderOperation): Promise<Advanced> {
    const now = this.clock.now();
    const to = FINAL_STATE[action.kind];
    const { response, adopted } = await this.transactions.run(async (session) => {
      const order = await this.current(held, session);
      const amounts = action.kind === 'capture' ? { capturedMinor: operation.amountMinor, refundableMinor: operation.amountMinor } : {};
      const next: Order = { ...order, ...amounts, state: to, pendingAction: null, stateHistory: { ...order.stateHistory, [to]: now } };
      const response = orderResponse(next);
      await this.attempts.complete(session, lease, to, response);
      const adopted: string[] = [];
      if (action.kind === 'capture') {
        await this.orders.markCaptured(session, order, operation.amountMinor, now, lease.recordId);
        const payment = await this.payments.settleAuthorization(session, order._id, 'captured', {
          capturedMinor: operation.amountMinor,
          providerOperationId: operation.id,
        });
        // The money taken: the same journal an automatic charge posts, of the captured amount.
        const journal = await this.ledger.postSale(session, {
          tenant: order.tenant,
          orderId: order._id,
          currency: order.currency,
          amountMinor: operation.amountMinor,
          postedAt: now,
        });
        if (payment === 'adopted') adopted.push('payment');
        if (journal === 'adopted') adopted.push('journal');
      } else {
        await this.orders.markVoided(session, order, now, lease.recordId);
        if ((await this.payments.settleAuthorization(session, order._id, 'voided', { providerOperationId: operation.id })) === 'adopted') {
          adopted.push('payment');
        }
      }
      if ((await this.enqueue(session, next, `order.${to}`, now)) === 'adopted') adopted.push('outbox event');
      return { response, adopted };
    });
    this.countAdopted(adopted);
    return { decision: 'completed', response };
  }

  /**
   * T1 of a refusal, stored and replayed. A lapsed authorization makes the
   * order expired; any other refusal leaves it authorized and lets it go.
   */
  private async refuse(held: Order, action: PendingPaymentAction, lease: Lease, reason: RefusalReason): Promise<Advanced> {
    const now = this.clock.now();
    const refusal = REFUSALS[reason];
    const body = problem(refusal.status, refusal.code, refusal.detail, { orderId: held._id });
    const response: IdempotentResponse = {
      status: refusal.status,
      headers: { 'content-type': PROBLEM_CONTENT_TYPE },
      body: JSON.stringify(body),
    };
    await this.transactions.run(async (session) => {
      const order = await this.current(held, session);
      await this.attempts.fail(session, lease, 'refused', response);
      if (reason === 'authorization_expired') {
        await this.orders.markExpired(session, order, now, lease.recordId);
        await this.payments.settleAuthorization(session, order._id, 'expired');
        const expired: Order = { ...order, state: 'expired', pendingAction: null, stateHistory: { ...order.stateHistory, expired: now } };
        await this.enqueue(session, expired, 'order.expired', now);
      } else {
        await this.orders.releaseAction(session, order._id, action, now);
      }
    });
    return { decision: 'completed', response };
  }

  /** The reaper canceled the key: nothing happened at the provider. The order is let go; a retry starts a new attempt. */
  private async abandon(held: Order, action: PendingPaymentAction, lease: Lease): Promise<Advanced> {
    const now = this.clock.now();
    await this.transactions.run(async (session) => {
      await this.attempts.fail(session, lease, 'canceled', null);
      await this.orders.releaseAction(session, held._id, action, now);
    });
    return { decision: 'abandoned' };
  }

  private enqueue(session: ClientSession, order: Order, type: string, now: Date): Promise<'enqueued' | 'adopted'> {
    return this.outbox.enqueue(
      session,
      {
        id: `evt_${order._id}_${order.state}`,
        tenant: order.tenant,
        type,
        aggregateId: order._id,
        schemaVersion: ORDER_COMPLETED_SCHEMA_VERSION,
        payload: orderView(order),
      },
      now,
    );
  }

  private countAdopted(what: string[]): void {
    for (const document of what) this.metrics.adoptedDocuments.inc({ what: document });
  }

  /** The order as this transaction sees it (an erasure may have changed it while the provider worked). */
  private async current(order: Order, session: ClientSession): Promise<Order> {
    return (await this.orders.findById(order._id, session)) ?? order;
  }
}

/** 200 with the order as the capture or void left it: the stored answer, replayed byte for byte. */
export function orderResponse(order: Order): IdempotentResponse {
  return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(orderView(order)) };
}
