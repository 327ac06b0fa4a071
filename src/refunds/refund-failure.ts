import { Injectable, Logger } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { refundFailedJournal } from '../ledger/journal.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OrderRepository } from '../orders/order.repository.js';
import { OutboxService } from '../outbox/outbox.service.js';
import type { Order } from '../orders/order.js';
import type { RefundEventData } from '../webhooks/payment-event.js';
import { REFUND_FAILURE, type Refund } from './refund.js';
import { RefundRepository } from './refund.repository.js';
import { refundView } from './refund.view.js';

/** Shape of `order.refund_failed`'s payload (the refund view, now failed, + the order's refundedMinor); bump when it changes. */
export const ORDER_REFUND_FAILED_SCHEMA_VERSION = 1;

/** Why a refund failure changes nothing; recorded with the event that carried it. */
export type RefundFailureIgnored =
  /** No refund of ours has this provider key. */
  | 'unknown_refund'
  /** The refund is failed already (another event about the same failure, or it never succeeded). */
  | 'already_failed'
  /** The provider reports another amount or currency than the refund's: left for a human, never applied. */
  | 'amount_mismatch';

/**
 * The decision for one refund failure, from reads in the caller's
 * transaction, so that the caller's first write (the inbox row) comes before
 * any effect:
 *  - `fail`: the refund succeeded with us and the provider failed it since;
 *  - `ignore`: nothing to change (why: the reason);
 *  - `not_ready`: the refund is still pending here - the request that made
 *    it has not recorded the provider's answer yet (it would record the
 *    replayed `succeeded` over this failure): deliver again later.
 */
export type RefundFailurePlan =
  | { action: 'fail'; refund: Refund }
  | { action: 'ignore'; refund: Refund | null; reason: RefundFailureIgnored }
  | { action: 'not_ready'; refund: Refund };

/**
 * A refund the provider failed after it had answered succeeded (Stripe: a
 * card refund `succeeded` or `pending` that fails days later, the money back
 * on the merchant's balance). Booked as it happened, in the inbox's
 * transaction:
 *   refund succeeded -> failed (`failed_at_provider`), fenced on `succeeded`;
 *   order: the amount back from refunded to refundable, state back
 *     (refunded -> partially_refunded -> saved | captured);
 *   journal `jrn_<refund id>_failed`: the compensation of the refund's reversal (balanced);
 *   outbox `order.refund_failed`.
 * Duplicates and other events about the same failure find the refund failed
 * (`already_failed`); a refund not ours, or already failed, changes nothing.
 * The refund's idempotency record keeps the 201 it completed with: a replay
 * of that key answers what was answered then, GET shows the refund failed.
 */
@Injectable()
export class RefundFailure {
  private readonly logger = new Logger(RefundFailure.name);

  constructor(
    private readonly refunds: RefundRepository,
    private readonly orders: OrderRepository,
    private readonly ledger: LedgerService,
    private readonly outbox: OutboxService,
    private readonly metrics: MetricsService,
  ) {}

  async plan(session: ClientSession, failure: RefundEventData): Promise<RefundFailurePlan> {
    const refund = await this.refunds.findByProviderKey(session, failure.refundKey);
    if (!refund) return { action: 'ignore', refund: null, reason: 'unknown_refund' };
    if (refund.state === 'pending') return { action: 'not_ready', refund };
    if (refund.state === 'failed') return { action: 'ignore', refund, reason: 'already_failed' };
    if (failure.amountMinor !== refund.amountMinor || failure.currency !== refund.currency) {
      this.logger.error(
        `Refund ${refund._id}: the provider failed ${failure.amountMinor} ${failure.currency} under its key, not ${refund.amountMinor} ${refund.currency}`,
      );
      return { action: 'ignore', refund, reason: 'amount_mismatch' };
    }
    return { action: 'fail', refund };
  }

  /** The effect of a `fail` plan, in the same transaction as the plan's reads. */
  async apply(session: ClientSession, refund: Refund, now: Date): Promise<Order> {
    // Fenced on `succeeded`: the plan read it in this transaction, so a miss is a bug or a concurrent writer - abort, never half-apply.
    if (!(await this.refunds.markFailedAfterSuccess(session, refund, REFUND_FAILURE.failedAtProvider, now))) {
      throw new Error(`Refund ${refund._id} left succeeded during its failure's transaction`);
    }
    const failed: Refund = {
      ...refund,
      state: 'failed',
      failureReason: REFUND_FAILURE.failedAtProvider,
      stateHistory: { ...refund.stateHistory, failed: now },
      updatedAt: now,
    };
    const order = await this.orders.restoreRefund(session, refund.orderId, refund.amountMinor, now);
    await this.ledger.post(
      {
        tenant: refund.tenant,
        journalId: `jrn_${refund._id}_failed`,
        orderId: refund.orderId,
        currency: refund.currency,
        lines: refundFailedJournal(refund.amountMinor),
        postedAt: now,
      },
      session,
    );
    await this.outbox.enqueue(
      session,
      {
        id: `evt_${refund._id}_refund_failed`,
        tenant: refund.tenant,
        type: 'order.refund_failed',
        aggregateId: refund.orderId,
        schemaVersion: ORDER_REFUND_FAILED_SCHEMA_VERSION,
        payload: { ...refundView(failed), refundedMinor: order.refundedMinor },
      },
      now,
    );
    return order;
  }

  /** Counted once the transaction committed (its body may have run more than once). */
  counted(): void {
    this.metrics.paymentOperations.inc({ kind: 'refund', outcome: 'failed_after_success' });
  }
}
