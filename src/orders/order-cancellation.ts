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
import { REFUNDABLE_STATES } from './order-state.js';
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

/**
 * The key holds money this deployment cannot give back yet (a refund without
 * the refunds module, a void without the capture module, a charge the
 * provider is still processing): the key stays held by the cancel (every
 * create under it is refused) and the same cancel finishes once it can.
 */
export class CancelUndoUnavailableError extends DomainError {
  readonly code = 'cancel_undo_unavailable';
  constructor(what: string) {
    super(
      `This key's order ${what}, which cannot be undone here yet: the key refuses new requests, but nothing was given back. Repeat the cancel once it can be.`,
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
    if (REFUNDABLE_STATES.includes(order.state)) {
      // The whole captured amount, the same on every repeat (the refund's own key replays it): a full refund.
      const refund = await this.refunds().refundByKey(tenant, order._id, undoKey, order.capturedMinor, CANCEL_REFUND_REASON);
      return { outcome: 'refunded', location: found.location, references: { orderId: order._id, refundId: refund.id } };
    }
    // Money held or still moving at the provider: not "nothing", and not ours to undo yet.
    if (order.state === 'authorized') throw new CancelUndoUnavailableError('is authorized (manual capture) and needs a void');
    if (order.state === 'processing') throw new CancelUndoUnavailableError('is still being processed by the provider');
    // A declined card (the stored 402), or money already given back (voided, expired, refunded): nothing to undo.
    return { outcome: 'nothing_to_undo', ...found };
  }

  private refunds(): KeyedRefunds {
    try {
      return this.moduleRef.get<KeyedRefunds>(KEYED_REFUNDS, { strict: false });
    } catch {
      throw new CancelUndoUnavailableError('was charged and needs a refund, and this deployment has no refunds');
    }
  }
}
