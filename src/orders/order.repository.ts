import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey, LeaseLostError } from '@idempotent-orders/nest-idempotency';
import { assertTransition, type OrderState } from './order-state.js';
import type { Order } from './order.js';
import { ORDER_MODEL } from './schemas/order.schema.js';

export interface OrderPage {
  orders: Order[];
  next: { createdAt: Date; id: string } | null;
}

/**
 * orders. Transitions are conditional updates on the expected current state;
 * when nothing matches, someone else moved the order and this worker stops.
 */
@Injectable()
export class OrderRepository {
  /**
   * The driver's collection, for GET /v1/orders/:id only: one findOne by _id
   * (+ tenant) is the whole read, and Mongoose's query building and casting
   * only add CPU to it (issue 28: a GET within 1.3x of a bare findOne). The
   * document is returned as stored, as lean() returned it.
   */
  private readonly native: Collection<Order>;

  constructor(@InjectModel(ORDER_MODEL) private readonly orders: Model<Order>) {
    this.native = orders.collection as unknown as Collection<Order>;
  }

  async insertPending(session: ClientSession, order: Order): Promise<void> {
    try {
      await this.orders.insertMany([order], { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateClaimError('order');
      throw error;
    }
  }

  findById(orderId: string, session?: ClientSession): Promise<Order | null> {
    return this.orders
      .findById(orderId)
      .session(session ?? null)
      .lean<Order>()
      .exec();
  }

  findForTenant(tenant: string, orderId: string): Promise<Order | null> {
    return this.native.findOne({ _id: orderId, tenant });
  }

  async listForTenant(tenant: string, limit: number, after: { createdAt: Date; id: string } | null): Promise<OrderPage> {
    const filter = after
      ? { tenant, $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.id } }] }
      : { tenant };
    const orders = await this.orders
      .find(filter)
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit + 1)
      .lean<Order[]>()
      .exec();
    const page = orders.slice(0, limit);
    const last = page.at(-1);
    return { orders: page, next: orders.length > limit && last ? { createdAt: last.createdAt, id: last._id } : null };
  }

  /** Erasure: the customer id becomes a pseudonym; amounts and states stay for the books. */
  async pseudonymizeCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string, now: Date): Promise<number> {
    const result = await this.orders.updateMany({ tenant, customerId }, { $set: { customerId: pseudonym, updatedAt: now } }, { session });
    return result.modifiedCount;
  }

  markCharged(session: ClientSession, order: Order, paymentId: string, now: Date): Promise<void> {
    return this.transition(session, order, 'charged', now, { paymentId });
  }

  markSaved(session: ClientSession, order: Order, now: Date): Promise<void> {
    return this.transition(session, order, 'saved', now, { paymentToken: null });
  }

  markFailed(session: ClientSession, order: Order, reason: string, now: Date): Promise<void> {
    return this.transition(session, order, 'failed', now, { failureReason: reason, paymentToken: null });
  }

  private async transition(session: ClientSession, order: Order, to: OrderState, now: Date, fields: Partial<Order>): Promise<void> {
    assertTransition(order.state, to);
    const result = await this.orders.updateOne(
      { _id: order._id, state: order.state },
      { $set: { ...fields, state: to, [`stateHistory.${to}`]: now, updatedAt: now } },
      { session },
    );
    // The record's lease check in the same transaction normally fires first; this is the order's own fence.
    if (result.matchedCount !== 1) throw new LeaseLostError(order.idempotency.recordId);
  }
}
