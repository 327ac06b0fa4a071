import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import {
  AttemptAbandonedError,
  type IdempotencyKeyContext,
  IdempotencyService,
  type IdempotentResult,
  type Lease,
} from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import { ORDER_ID_PATTERN, type PaymentActionKind, type PendingPaymentAction } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';
import { OrderNotFoundError } from '../orders/orders.errors.js';
import { FAULTS, VOID_ORDER_OPERATION, VOID_ORDER_ROUTE } from './capture-void.js';
import { CaptureVoidWorkflow } from './capture-void-workflow.js';
import { CaptureExceedsAuthorizedError, OrderNotCapturableError, OrderNotVoidableError } from './capture-void.errors.js';

/**
 * The keyed entry of capture and void: finds the order, claims the key and
 * takes the order in the claim transaction (T0); every phase after the claim
 * is CaptureVoidWorkflow's, the one path request, retry and reaper share.
 */
@Injectable()
export class CaptureVoidService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly workflow: CaptureVoidWorkflow,
    private readonly idempotency: IdempotencyService,
    private readonly clock: Clock,
    private readonly faults: FaultInjector,
  ) {}

  /** POST /v1/orders/:id/capture: `amountMinor` absent = the whole authorization. */
  capture(tenant: string, orderId: string, amountMinor: number | undefined, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    return this.run('capture', tenant, orderId, amountMinor ?? null, key);
  }

  /** POST /v1/orders/:id/void. */
  void(tenant: string, orderId: string, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    return this.run('void', tenant, orderId, null, key);
  }

  /**
   * A void without HTTP (cancel by key): the same protocol under the
   * caller's own `clientKey` in the orders.void key space, fingerprinted as
   * POST /v1/orders/:id/void of `orderId` - so a repeated call replays the
   * first answer, and an HTTP void under the same key and order would too.
   * Throws what the route answers as a problem (OrderNotVoidableError, ...).
   */
  voidByKey(tenant: string, orderId: string, clientKey: string): Promise<IdempotentResult> {
    return this.void(tenant, orderId, {
      clientKey,
      operation: VOID_ORDER_OPERATION,
      schemaVersion: 1,
      method: 'POST',
      route: VOID_ORDER_ROUTE,
      params: { id: orderId },
    });
  }

  private async run(
    kind: PaymentActionKind,
    tenant: string,
    orderId: string,
    requestedMinor: number | null,
    key: IdempotencyKeyContext,
  ): Promise<IdempotentResult> {
    const order = ORDER_ID_PATTERN.test(orderId) ? await this.orders.findForTenant(tenant, orderId) : null;
    if (!order) throw new OrderNotFoundError();
    // The route's template does not name the order: the fingerprinted body does.
    const body = kind === 'capture' ? { orderId, amountMinor: requestedMinor } : { orderId };
    const request = this.idempotency.requestFor(key, tenant, body, order.customerId);
    return this.idempotency.execute(request, {
      begin: (session, lease) => this.take(session, kind, tenant, orderId, requestedMinor, lease),
      resume: async (lease) => {
        this.faults.crashIf(FAULTS[kind].claim);
        const advanced = await this.workflow.advance(lease, 'request');
        if (advanced.decision === 'abandoned') throw new AttemptAbandonedError(lease.recordId);
        return advanced.response;
      },
    });
  }

  /** T0, inside the claim transaction: one conditional update takes the order, or the claim rolls back with the refusal. */
  private async take(
    session: ClientSession,
    kind: PaymentActionKind,
    tenant: string,
    orderId: string,
    requestedMinor: number | null,
    lease: Lease,
  ): Promise<void> {
    const now = this.clock.now();
    const order = await this.orders.findById(orderId, session);
    if (!order || order.tenant !== tenant) throw new OrderNotFoundError();
    const amountMinor = kind === 'capture' ? (requestedMinor ?? order.authorizedMinor) : order.authorizedMinor;
    if (kind === 'capture' && order.state === 'authorized' && amountMinor > order.authorizedMinor) {
      throw new CaptureExceedsAuthorizedError(order.authorizedMinor);
    }
    const action: PendingPaymentAction = { kind, recordId: lease.recordId, claimId: lease.claimId, amountMinor, startedAt: now };
    if (await this.orders.takeForAction(session, tenant, orderId, action, now)) return;
    const held = order.state === 'authorized' && !!order.pendingAction && order.pendingAction.recordId !== lease.recordId;
    throw kind === 'capture' ? new OrderNotCapturableError(order.state, held) : new OrderNotVoidableError(order.state, held);
  }
}
