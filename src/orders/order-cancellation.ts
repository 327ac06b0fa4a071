import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  type CancelSettlement,
  type CancelSituation,
  type Canceler,
  IdempotencyCancellation,
  type Lease,
} from '@idempotent-orders/nest-idempotency';
import { DomainError } from '../common/domain-error.js';
import { OrderWorkflow } from './order-workflow.js';
import { orderIdForClaim } from './order.js';
import { OrderRepository } from './order.repository.js';
import { CREATE_ORDER_OPERATION } from './orders.service.js';

/** The refund a cancel makes of a charged order: keyed with the cancel's undo key, so it happens once. */
export interface KeyedRefunds {
  refundByKey(tenant: string, orderId: string, refundKey: string, amountMinor: number, reason: string): Promise<{ id: string }>;
}

/**
 * Where the cancel finds its refunds (src/refunds' RefundsService, looked up
 * when a cancel needs one: the refunds module depends on orders, so orders
 * cannot import it).
 */
export const KEYED_REFUNDS = Symbol('KEYED_REFUNDS');

/** The reason the cancel's refund carries. */
export const CANCEL_REFUND_REASON = 'canceled_by_key';

/** A charged order whose cancel needs a refund, in a deployment without the refunds module (the key stays held by the cancel). */
export class CancelRefundUnavailableError extends DomainError {
  readonly code = 'cancel_refund_unavailable';
  constructor() {
    super(
      'This key created a charged order and refunds are not available here to undo it: the key refuses new requests, but the charge is not refunded yet. Repeat the cancel once refunds are available.',
    );
  }
}

/**
 * Cancel by key for `orders.create` (POST /v1/idempotency-keys/:key/cancel):
 * an attempt in flight is reconciled exactly as the reaper does it (the
 * provider's chargeOrCancel: the charge key is canceled unless a charge
 * exists, which is then saved); a charged order is refunded in full; a key
 * that never ran, or ran to a declined card, has nothing to undo.
 */
@Injectable()
export class OrderCancellation implements Canceler, OnModuleInit {
  constructor(
    private readonly cancellation: IdempotencyCancellation,
    private readonly workflow: OrderWorkflow,
    private readonly orders: OrderRepository,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.cancellation.register(CREATE_ORDER_OPERATION, this);
  }

  /** The same path as the reaper: never charges, cancels the charge key unless a charge exists. */
  async stop(lease: Lease): Promise<void> {
    await this.workflow.advance(lease, 'reconcile');
  }

  async settle(situation: CancelSituation): Promise<CancelSettlement> {
    if (!situation.attempt) return { outcome: 'never_run' };
    const { tenant, claimId, undoKey } = situation.attempt;
    const order = await this.orders.findForTenant(tenant, orderIdForClaim(claimId));
    if (!order) return { outcome: situation.state === 'answered' ? 'nothing_to_undo' : 'never_run' };
    const found = { location: `/v1/orders/${order._id}`, references: { orderId: order._id } };
    if (situation.state === 'never_run') return { outcome: 'never_run', ...found };
    if (situation.state === 'stopped') return { outcome: 'canceled_before_charge', ...found };
    // A declined card (the stored 402): nothing was charged.
    if (order.state !== 'saved') return { outcome: 'nothing_to_undo', ...found };
    const refund = await this.refunds().refundByKey(tenant, order._id, undoKey, order.amountMinor, CANCEL_REFUND_REASON);
    return { outcome: 'refunded', location: found.location, references: { orderId: order._id, refundId: refund.id } };
  }

  private refunds(): KeyedRefunds {
    try {
      return this.moduleRef.get<KeyedRefunds>(KEYED_REFUNDS, { strict: false });
    } catch {
      throw new CancelRefundUnavailableError();
    }
  }
}
