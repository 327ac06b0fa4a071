import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { ClientSession, QueryFilter, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey, LeaseLostError } from '@idempotent-orders/nest-idempotency';
import { afterPosition, pageOf, type PagePosition } from '../common/page-cursor.js';
import { assertTransition, REFUNDABLE_STATES, type OrderState } from './order-state.js';
import type { Order, PendingPaymentAction } from './order.js';
import { ORDER_MODEL } from './schemas/order.schema.js';

export interface OrderPage {
  orders: Order[];
  next: PagePosition | null;
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

  async listForTenant(tenant: string, limit: number, after: PagePosition | null): Promise<OrderPage> {
    const orders = await this.orders
      .find({ tenant, ...afterPosition(after) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit + 1)
      .lean<Order[]>()
      .exec();
    const { items, next } = pageOf(orders, limit);
    return { orders: items, next };
  }

  /** Erasure: the customer id becomes a pseudonym; amounts and states stay for the books. */
  async pseudonymizeCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string, now: Date): Promise<number> {
    const result = await this.orders.updateMany({ tenant, customerId }, { $set: { customerId: pseudonym, updatedAt: now } }, { session });
    return result.modifiedCount;
  }

  /** Automatic capture: the provider authorized and captured the whole amount at once. */
  markCharged(session: ClientSession, order: Order, paymentId: string, now: Date): Promise<void> {
    const amountMinor = order.amountMinor;
    return this.transition(session, order, 'charged', now, {
      paymentId,
      authorizedMinor: amountMinor,
      capturedMinor: amountMinor,
      refundableMinor: amountMinor,
    });
  }

  /** The provider answers later (asynchronous method): the token stays until the outcome, like any unfinished order's. */
  markProcessing(session: ClientSession, order: Order, now: Date): Promise<void> {
    return this.transition(session, order, 'processing', now, {});
  }

  /** Orders waiting on their provider since before `before`, oldest first (the processing reconciliation). */
  /**
   * Orders stored by a release before the money fields existed get the
   * amounts their state implies - a `charged` or `saved` order was charged
   * in full, automatically; any other took nothing - so that they can be
   * refunded like any other. One conditional update per order (only where
   * the field is still absent): running it again, or on several instances
   * at once, changes nothing more. Returns how many orders it filled.
   */
  async backfillMoneyFields(batchSize = 500): Promise<number> {
    let filled = 0;
    for (;;) {
      const legacy = await this.native
        .find({ capturedMinor: { $exists: false } }, { projection: { _id: 1, state: 1, amountMinor: 1 } })
        .limit(batchSize)
        .toArray();
      let filledNow = 0;
      for (const order of legacy) {
        const taken = order.state === 'charged' || order.state === 'saved' ? order.amountMinor : 0;
        const money = { authorizedMinor: taken, capturedMinor: taken, refundedMinor: 0, refundableMinor: taken };
        const result = await this.native.updateOne(
          { _id: order._id, capturedMinor: { $exists: false } },
          { $set: { capture: 'automatic', ...money, authorizationExpiresAt: null } },
        );
        filledNow += result.modifiedCount;
      }
      filled += filledNow;
      if (legacy.length < batchSize || filledNow === 0) return filled;
    }
  }

  /** `processing` since before `before`, unless a provider that cannot cancel it put its next look past `now`. */
  findProcessingSince(before: Date, limit: number, now: Date = new Date()): Promise<Order[]> {
    return this.orders
      .find({
        state: 'processing',
        'stateHistory.processing': { $lte: before },
        $or: [{ processingCheckAfter: { $exists: false } }, { processingCheckAfter: null }, { processingCheckAfter: { $lte: now } }],
      })
      .sort({ 'stateHistory.processing': 1 })
      .limit(limit)
      .lean<Order[]>()
      .exec();
  }

  markSaved(session: ClientSession, order: Order, now: Date): Promise<void> {
    return this.transition(session, order, 'saved', now, { paymentToken: null });
  }

  /** The processing bound's next look at an order still `processing` (fenced on the state: a settled order is left alone). */
  async deferProcessingCheck(orderId: string, until: Date): Promise<void> {
    await this.orders.updateOne({ _id: orderId, state: 'processing' }, { $set: { processingCheckAfter: until } }).exec();
  }

  markFailed(session: ClientSession, order: Order, reason: string, now: Date): Promise<void> {
    return this.transition(session, order, 'failed', now, { failureReason: reason, paymentToken: null });
  }

  /** Manual capture: the provider holds the amount until `expiresAt`; nothing is taken yet. */
  markAuthorized(session: ClientSession, order: Order, paymentId: string, expiresAt: Date, now: Date): Promise<void> {
    return this.transition(session, order, 'authorized', now, {
      paymentId,
      authorizedMinor: order.amountMinor,
      authorizationExpiresAt: expiresAt,
      paymentToken: null,
    });
  }

  /**
   * The capture of `amountMinor` (at most the authorized amount) by the
   * operation holding `recordId`'s lease: fenced on the order too (its
   * pendingAction is that operation's), which it clears.
   */
  markCaptured(session: ClientSession, order: Order, amountMinor: number, now: Date, recordId: string): Promise<void> {
    if (!Number.isSafeInteger(amountMinor) || amountMinor < 1 || amountMinor > order.authorizedMinor) {
      throw new Error(`Order ${order._id}: a capture of ${amountMinor} of ${order.authorizedMinor} authorized`);
    }
    const fields = { capturedMinor: amountMinor, refundableMinor: amountMinor, pendingAction: null };
    return this.transition(session, order, 'captured', now, fields, recordId, actionGuard(recordId));
  }

  /** `recordId`: the void operation holding the order; null for the expiry sweep, which only voids an order nobody holds. */
  markVoided(session: ClientSession, order: Order, now: Date, recordId: string | null): Promise<void> {
    return this.transition(session, order, 'voided', now, { pendingAction: null }, recordId ?? undefined, actionGuard(recordId));
  }

  /**
   * The authorization lapsed at the provider before anyone captured it:
   * found by a capture or void (`recordId`, which holds the order) or by the
   * expiry sweep (null: only an order nobody holds).
   */
  markExpired(session: ClientSession, order: Order, now: Date, recordId: string | null = null): Promise<void> {
    return this.transition(session, order, 'expired', now, { pendingAction: null }, recordId ?? undefined, actionGuard(recordId));
  }

  /**
   * A capture's or void's claim (inside its claim transaction): ONE
   * conditional update takes the order for this operation - authorized, and
   * held by no other action (a restarted attempt of the same record may take
   * it again), with at least `action.amountMinor` authorized. Null when it
   * did not match, and then nothing was written.
   */
  takeForAction(session: ClientSession, tenant: string, orderId: string, action: PendingPaymentAction, now: Date): Promise<Order | null> {
    return this.orders
      .findOneAndUpdate(
        {
          _id: orderId,
          tenant,
          state: 'authorized',
          authorizedMinor: { $gte: action.amountMinor },
          $or: [{ pendingAction: null }, { 'pendingAction.recordId': action.recordId }],
        },
        { $set: { pendingAction: action, updatedAt: now } },
        { session, returnDocument: 'after' },
      )
      .lean<Order>()
      .exec();
  }

  /** The order a capture's or void's attempt holds, by its claim; null once that action was finished or released. */
  findByActionClaim(claimId: string, session?: ClientSession): Promise<Order | null> {
    return this.orders
      .findOne({ 'pendingAction.claimId': claimId })
      .session(session ?? null)
      .lean<Order>()
      .exec();
  }

  /** A capture or void that ended without moving the order (refused, canceled) lets it go; fenced on the claim. */
  async releaseAction(session: ClientSession, orderId: string, action: PendingPaymentAction, now: Date): Promise<void> {
    const result = await this.orders.updateOne(
      { _id: orderId, 'pendingAction.claimId': action.claimId },
      { $set: { pendingAction: null, updatedAt: now } },
      { session },
    );
    if (result.matchedCount !== 1) throw new LeaseLostError(action.recordId);
  }

  /** Authorized orders nobody holds whose authorization lapsed by `now`, oldest first (index state_authorization_expiry). */
  findLapsedAuthorizations(now: Date, limit: number): Promise<Order[]> {
    return this.orders
      .find({ state: 'authorized', authorizationExpiresAt: { $lte: now }, pendingAction: null })
      .sort({ authorizationExpiresAt: 1 })
      .limit(limit)
      .lean<Order[]>()
      .exec();
  }

  /**
   * A refund's reservation, inside the transaction that creates the refund:
   * one conditional update on the refundable amount, never a read then a
   * check, so two racing refunds cannot both take the last of it. Null when
   * the order is another tenant's, not refundable, or has less than
   * `amountMinor` left - and then nothing was written.
   */
  reserveRefund(session: ClientSession, tenant: string, orderId: string, amountMinor: number, now: Date): Promise<Order | null> {
    return this.orders
      .findOneAndUpdate(
        { _id: orderId, tenant, state: { $in: REFUNDABLE_STATES }, refundableMinor: { $gte: amountMinor } },
        { $inc: { refundableMinor: -amountMinor }, $set: { updatedAt: now } },
        { session, returnDocument: 'after' },
      )
      .lean<Order>()
      .exec();
  }

  /** A refund that failed gives its reservation back. */
  async releaseRefund(session: ClientSession, orderId: string, amountMinor: number, now: Date): Promise<void> {
    const result = await this.orders.updateOne(
      { _id: orderId },
      { $inc: { refundableMinor: amountMinor }, $set: { updatedAt: now } },
      { session },
    );
    if (result.matchedCount !== 1) throw new Error(`No order ${orderId} to give a refund's reservation back to`);
  }

  /**
   * A refund succeeded: its amount moves from reserved to refunded, and the
   * order becomes partially_refunded, or refunded once nothing is left. The
   * increment write-locks the order for the rest of the transaction, so the
   * state it then sets follows from the amounts it just wrote.
   */
  async applyRefund(session: ClientSession, orderId: string, amountMinor: number, now: Date): Promise<Order> {
    const order = await this.orders
      .findOneAndUpdate(
        { _id: orderId, state: { $in: REFUNDABLE_STATES } },
        { $inc: { refundedMinor: amountMinor }, $set: { updatedAt: now } },
        { session, returnDocument: 'after' },
      )
      .lean<Order>()
      .exec();
    if (!order) throw new Error(`Order ${orderId} is not refundable: a refund reserved on it cannot have succeeded`);
    if (order.refundedMinor > order.capturedMinor) throw new Error(`Order ${orderId} would be refunded past its captured amount`);
    const to: OrderState = order.refundedMinor === order.capturedMinor ? 'refunded' : 'partially_refunded';
    if (order.state === to) return order;
    await this.transition(session, order, to, now, {});
    return { ...order, state: to, stateHistory: { ...order.stateHistory, [to]: now } };
  }

  /**
   * A refund that had succeeded failed at the provider afterwards: its amount
   * moves back from refunded to refundable, and the order returns to
   * partially_refunded, or to where it was before any refund (saved,
   * captured) once nothing is refunded. Inside the caller's transaction, like applyRefund.
   */
  async restoreRefund(session: ClientSession, orderId: string, amountMinor: number, now: Date): Promise<Order> {
    const order = await this.orders
      .findOneAndUpdate(
        { _id: orderId, refundedMinor: { $gte: amountMinor } },
        { $inc: { refundedMinor: -amountMinor, refundableMinor: amountMinor }, $set: { updatedAt: now } },
        { session, returnDocument: 'after' },
      )
      .lean<Order>()
      .exec();
    if (!order) throw new Error(`Order ${orderId} has less than ${amountMinor} refunded: a refund of it cannot have failed`);
    const unrefunded: OrderState = order.capture === 'manual' ? 'captured' : 'saved';
    const to: OrderState = order.refundedMinor === 0 ? unrefunded : 'partially_refunded';
    if (order.state === to) return order;
    await this.transition(session, order, to, now, {});
    return { ...order, state: to, stateHistory: { ...order.stateHistory, [to]: now } };
  }

  /**
   * `fencedBy`: the record whose lease this write runs under, when it is not
   * the create's (capture, void); `guard`: what else the order must match (its pendingAction).
   */
  private async transition(
    session: ClientSession,
    order: Order,
    to: OrderState,
    now: Date,
    fields: Partial<Order>,
    fencedBy = order.idempotency.recordId,
    guard: QueryFilter<Order> = {},
  ): Promise<void> {
    assertTransition(order.state, to);
    const result = await this.orders.updateOne(
      { ...guard, _id: order._id, state: order.state },
      { $set: { ...fields, state: to, [`stateHistory.${to}`]: now, updatedAt: now } },
      { session },
    );
    // The record's lease check in the same transaction normally fires first; this is the order's own fence.
    if (result.matchedCount !== 1) throw new LeaseLostError(fencedBy);
  }
}

/** A capture's or void's write matches only while its operation holds the order; the sweep's only while nobody does. */
function actionGuard(recordId: string | null): QueryFilter<Order> {
  return recordId ? { 'pendingAction.recordId': recordId } : { pendingAction: null };
}
