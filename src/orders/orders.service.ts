import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import { decodeCursor } from '../common/page-cursor.js';
import {
  AttemptAbandonedError,
  type IdempotencyKeyContext,
  IdempotencyService,
  type IdempotentResult,
  type Lease,
} from '@idempotent-orders/nest-idempotency';
import { LedgerService } from '../ledger/ledger.service.js';
import { PaymentGateway } from '../payments/payment-gateway.port.js';
import type { CreateOrderDto } from './dto/create-order.dto.js';
import { orderAmountMinor } from './order-amount.js';
import { OrderWorkflow, responseFor } from './order-workflow.js';
import { FAILURE } from './order.js';
import { ORDER_ID_PATTERN, orderIdForClaim, type Order } from './order.js';
import { OrderRepository, type OrderPage } from './order.repository.js';
import { OrderNotFoundError } from './orders.errors.js';

export const CREATE_ORDER_OPERATION = 'orders.create';

@Injectable()
export class OrdersService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly workflow: OrderWorkflow,
    private readonly idempotency: IdempotencyService,
    private readonly ledger: LedgerService,
    private readonly clock: Clock,
    private readonly faults: FaultInjector,
    private readonly payments: PaymentGateway,
  ) {}

  /** Claim the key with a pending order (T0), then drive it to a final state. */
  async create(tenant: string, dto: CreateOrderDto, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    // Before the claim: a total the provider refuses is bad input (422), nothing written.
    const amountMinor = orderAmountMinor(dto.items, (total) => this.payments.amountRefusal(total, dto.currency));
    const request = this.idempotency.requestFor(key, tenant, dto, dto.customerId);
    // The pending order of this request's own claim (the last run of the claim transaction is the one that
    // committed): the workflow starts from it instead of reading it back. A resumed attempt reads.
    let claimed: Order | undefined;
    const result = await this.idempotency.execute(request, {
      begin: (session, lease) => this.orders.insertPending(session, (claimed = this.newOrder(tenant, dto, amountMinor, lease))),
      resume: async (lease) => {
        this.faults.crashIf('after-claim');
        const order = await this.workflow.advance(lease, 'request', claimed);
        if (order.state === 'failed' && order.failureReason === FAILURE.abandoned) throw new AttemptAbandonedError(lease.recordId);
        return responseFor(order);
      },
    });
    this.faults.crashIf('before-response');
    return result;
  }

  async get(tenant: string, orderId: string): Promise<Order> {
    const order = ORDER_ID_PATTERN.test(orderId) ? await this.orders.findForTenant(tenant, orderId) : null;
    if (!order) throw new OrderNotFoundError();
    return order;
  }

  list(tenant: string, limit: number, cursor?: string): Promise<OrderPage> {
    return this.orders.listForTenant(tenant, limit, cursor ? decodeCursor(cursor, (id) => ORDER_ID_PATTERN.test(id)) : null);
  }

  async ledgerFor(tenant: string, orderId: string) {
    const order = await this.get(tenant, orderId);
    return this.ledger.entriesForOrder(tenant, order._id);
  }

  eraseCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    return this.orders.pseudonymizeCustomer(session, tenant, customerId, pseudonym, this.clock.now());
  }

  private newOrder(tenant: string, dto: CreateOrderDto, amountMinor: number, lease: Lease): Order {
    const now = this.clock.now();
    return {
      _id: orderIdForClaim(lease.claimId),
      tenant,
      customerId: dto.customerId,
      currency: dto.currency,
      items: dto.items.map((item) => ({ sku: item.sku, quantity: item.quantity, unitPriceMinor: item.unitPriceMinor })),
      amountMinor,
      capture: dto.capture ?? 'automatic',
      authorizedMinor: 0,
      capturedMinor: 0,
      refundedMinor: 0,
      refundableMinor: 0,
      authorizationExpiresAt: null,
      paymentToken: dto.paymentMethod.token,
      state: 'pending',
      stateHistory: { pending: now },
      failureReason: null,
      paymentId: null,
      idempotency: { recordId: lease.recordId, attempt: lease.attempt },
      createdAt: now,
      updatedAt: now,
    };
  }
}
