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
import { orderIdForClaim, type Order } from './order.js';
import { OrderRepository } from './order.repository.js';
import { CREATE_ORDER_OPERATION } from './orders.service.js';

/**
 * The refund a cancel makes of a charged order, keyed with the cancel's undo
 * key so that it happens once: the shape of src/refunds'
 * RefundsService.refundByKey, whose answer is the refund's stored answer
 * (201 with the refund view; 402 refund_declined or 422 refund_refused).
 */
export interface KeyedRefunds {
  refundByKey(
    tenant: string,
    orderId: string,
    refundKey: string,
    amountMinor: number,
    reason: string,
  ): Promise<{ response: { status: number; body: string } }>;
}

/**
 * Where the cancel finds its refunds (src/refunds' RefundsService, looked up
 * when a cancel needs one: the refunds module depends on orders, so orders
 * cannot import it).
 */
export const KEYED_REFUNDS = Symbol('KEYED_REFUNDS');

/** The reason the cancel's refund carries. */
export const CANCEL_REFUND_REASON = 'key_canceled';

/** Refusals of a refund (thrown, nothing stored) that mean the money was already given back by other refunds. */
const ALREADY_REFUNDED = new Set(['order_not_refundable', 'refund_exceeds_captured']);

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

/** The provider (or the refund's own rules) refused the cancel's refund: the key stays held, the refund's answer says why. */
export class CancelRefundRefusedError extends DomainError {
  readonly code = 'cancel_refund_refused';
  constructor(status: number, refusal: string) {
    super(
      `The refund that undoes this key's order was refused (${status} ${refusal}); the key refuses new requests, nothing was given back.`,
    );
    this.extensions = { refundStatus: status, refundCode: refusal };
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
    // Refunded too: a repeat of a cancel whose refund went through finds it again under the same key.
    if (REFUNDABLE_STATES.includes(order.state) || order.state === 'refunded') {
      const refundId = await this.refund(tenant, order, undoKey);
      if (refundId) return { outcome: 'refunded', location: found.location, references: { orderId: order._id, refundId } };
    }
    // Money held or still moving at the provider: not "nothing", and not ours to undo yet.
    if (order.state === 'authorized') throw new CancelUndoUnavailableError('is authorized (manual capture) and needs a void');
    if (order.state === 'processing') throw new CancelUndoUnavailableError('is still being processed by the provider');
    // A declined card (the stored 402), or money already given back (voided, expired, refunded): nothing to undo.
    return { outcome: 'nothing_to_undo', ...found };
  }

  /**
   * The whole captured amount, the same on every repeat (the refund's own key
   * replays it): a full refund. Null when other refunds had already given it all back.
   */
  private async refund(tenant: string, order: Order, undoKey: string): Promise<string | null> {
    let result: Awaited<ReturnType<KeyedRefunds['refundByKey']>>;
    try {
      result = await this.refunds().refundByKey(tenant, order._id, undoKey, order.capturedMinor, CANCEL_REFUND_REASON);
    } catch (error) {
      if (order.state === 'refunded' && ALREADY_REFUNDED.has((error as { code?: string }).code ?? '')) return null;
      throw error;
    }
    const body = JSON.parse(result.response.body) as { id?: string; code?: string };
    if (result.response.status !== 201 || !body.id) throw new CancelRefundRefusedError(result.response.status, body.code ?? 'unknown');
    return body.id;
  }

  private refunds(): KeyedRefunds {
    try {
      return this.moduleRef.get<KeyedRefunds>(KEYED_REFUNDS, { strict: false });
    } catch {
      throw new CancelUndoUnavailableError('was charged and needs a refund, and this deployment has no refunds');
    }
  }
}
