import { Injectable } from '@nestjs/common';
import {
  AttemptAbandonedError,
  type IdempotencyKeyContext,
  IdempotencyService,
  type IdempotentRequest,
  type IdempotentResult,
} from '@idempotent-orders/nest-idempotency';
import { FaultInjector } from '../common/fault-injector.js';
import { AmountOutOfRangeError, OrderNotFoundError } from '../orders/orders.errors.js';
import { MAX_ORDER_AMOUNT_MINOR } from '../orders/order-amount.js';
import { ORDER_ID_PATTERN, type Order } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';
import type { CreateRefundDto } from './dto/create-refund.dto.js';
import { REFUND_FAILURE, REFUND_ID_PATTERN, REFUND_REASONS, type Refund, type RefundReason } from './refund.js';
import { RefundRepository } from './refund.repository.js';
import { type RefundBody, RefundWorkflow, responseFor, type RestBody } from './refund-workflow.js';
import { RefundNotFoundError } from './refunds.errors.js';

export const REFUND_OPERATION = 'orders.refund';

/**
 * The key context of refundByKey: a caller without HTTP. Its method and
 * route are part of the fingerprint, so the same client key sent over HTTP
 * is another request (422), never a replay of the internal one.
 */
const INTERNAL_KEY = { operation: REFUND_OPERATION, schemaVersion: 1, method: 'INTERNAL', route: 'RefundsService.refundByKey' } as const;
const INTERNAL_REST_KEY = { ...INTERNAL_KEY, route: 'RefundsService.refundRestByKey' } as const;

@Injectable()
export class RefundsService {
  constructor(
    private readonly refunds: RefundRepository,
    private readonly orders: OrderRepository,
    private readonly workflow: RefundWorkflow,
    private readonly idempotency: IdempotencyService,
    private readonly faults: FaultInjector,
  ) {}

  /** POST /v1/orders/:id/refunds. */
  async create(tenant: string, orderId: string, dto: CreateRefundDto, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    return this.refund(tenant, key, { orderId, amountMinor: dto.amountMinor, reason: dto.reason });
  }

  /**
   * The same protocol for a caller without HTTP (cancel by key): `refundKey`
   * is the caller's own idempotency key (scoped to the tenant and
   * `orders.refund`); the same key with the same order, amount and reason
   * answers what the first call did, another body under it throws
   * IdempotencyKeyReusedError. The result is the stored answer: 201 with the
   * refund view as body, 402 `refund_declined` or 422 `refund_refused`
   * (problem+json). Thrown, with nothing stored: OrderNotFoundError,
   * OrderNotRefundableError, RefundExceedsCapturedError,
   * PaymentProviderUnavailableError (retry with the same key: it resumes),
   * IdempotencyKeyInUseError (in flight elsewhere).
   */
  async refundByKey(tenant: string, orderId: string, refundKey: string, amountMinor: number, reason: string): Promise<IdempotentResult> {
    if (!Number.isSafeInteger(amountMinor) || amountMinor < 1 || amountMinor > MAX_ORDER_AMOUNT_MINOR) {
      throw new AmountOutOfRangeError(MAX_ORDER_AMOUNT_MINOR);
    }
    if (!(REFUND_REASONS as readonly string[]).includes(reason)) throw new Error(`Unknown refund reason ${reason}`);
    if (refundKey.length < 1 || refundKey.length > 255) throw new Error('A refund key is 1 to 255 characters');
    return this.refund(tenant, { ...INTERNAL_KEY, clientKey: refundKey }, { orderId, amountMinor, reason: reason as RefundReason });
  }

  /**
   * A refund of everything left to refund on the order (cancel by key), under
   * the caller's key like refundByKey. The amount is read and reserved inside
   * the claim transaction, never before it, and is not part of the key's
   * fingerprint. Thrown as well, nothing written: RefundsInFlightError while
   * another refund of the order holds a reservation (the rest is not known
   * until it is final), RefundExceedsCapturedError when nothing is left.
   */
  async refundRestByKey(tenant: string, orderId: string, refundKey: string, reason: string): Promise<IdempotentResult> {
    if (!(REFUND_REASONS as readonly string[]).includes(reason)) throw new Error(`Unknown refund reason ${reason}`);
    if (refundKey.length < 1 || refundKey.length > 255) throw new Error('A refund key is 1 to 255 characters');
    const body: RestBody = { orderId, amountMinor: 'rest', reason: reason as RefundReason };
    return this.refund(tenant, { ...INTERNAL_REST_KEY, clientKey: refundKey }, body);
  }

  async list(tenant: string, orderId: string): Promise<Refund[]> {
    const order = await this.orderOf(tenant, orderId);
    return this.refunds.listForOrder(tenant, order._id);
  }

  async get(tenant: string, orderId: string, refundId: string): Promise<Refund> {
    const order = await this.orderOf(tenant, orderId);
    const refund = REFUND_ID_PATTERN.test(refundId) ? await this.refunds.findForTenant(tenant, order._id, refundId) : null;
    if (!refund) throw new RefundNotFoundError();
    return refund;
  }

  /** Claim the key with the reservation and a pending refund (T0, RefundWorkflow.begin), then drive it to a final state. */
  private async refund(tenant: string, key: IdempotencyKeyContext, body: RefundBody | RestBody): Promise<IdempotentResult> {
    // The order's customer is the request's data subject (an erasure of them stops it); no such order: 404, key untouched.
    const order = await this.orderOf(tenant, body.orderId);
    const request: IdempotentRequest = this.idempotency.requestFor(key, tenant, body, order.customerId);
    return this.idempotency.execute(request, {
      begin: (session, lease) => this.workflow.begin(session, tenant, body, lease),
      resume: async (lease) => {
        this.faults.crashIf('after-refund-claim');
        const refund = await this.workflow.advance(lease, 'request');
        if (refund.state === 'failed' && refund.failureReason === REFUND_FAILURE.abandoned) throw new AttemptAbandonedError(lease.recordId);
        return responseFor(refund);
      },
    });
  }

  private async orderOf(tenant: string, orderId: string): Promise<Order> {
    const order = ORDER_ID_PATTERN.test(orderId) ? await this.orders.findForTenant(tenant, orderId) : null;
    if (!order) throw new OrderNotFoundError();
    return order;
  }
}
