import { Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';

/** Why an order's money may differ between the provider and the ledger for a while, by design. */
export type InFlightReason =
  /** A refund reserved and not final (pending, or in its resume window): the provider may have refunded before our T1. */
  | 'refund_in_flight'
  /** A capture or void held on the order (pendingAction): the provider may have captured before our T1. */
  | 'action_in_flight'
  /**
   * The create itself has not finished (pending, or charged and not yet saved), or its charge is
   * asynchronous and unsettled with us (processing: the provider may have settled it while its
   * webhook is late; the webhook or the processing-bound check settles it, and the bound check
   * alerts on one that stays): the provider may have charged before our journal.
   */
  | 'charge_in_flight';

/** The order fields the check reads (orders/order.ts). */
interface OrderMoneyDoc {
  _id: string;
  state: string;
  capturedMinor?: number;
  refundedMinor?: number;
  refundableMinor?: number;
  pendingAction?: unknown;
}

/**
 * Which orders have money moving right now: read-only, straight from the
 * orders and refunds collections, because settlement reconciliation is an
 * auditor of the books that also runs as a CLI without the order and
 * refund modules (their repositories would pull in the whole service). The
 * reaper finishes every such piece of work within its horizon; until then
 * a difference on its charge key is not a mismatch.
 */
@Injectable()
export class WorkInFlight {
  private readonly orders: Collection<OrderMoneyDoc>;
  private readonly refunds: Collection<{ orderId: string; state: string }>;

  constructor(@InjectConnection() connection: Connection) {
    this.orders = connection.collection<OrderMoneyDoc>('orders');
    this.refunds = connection.collection<{ orderId: string; state: string }>('refunds');
  }

  /** The orders among these with work in flight, and why. */
  async among(orderIds: string[]): Promise<Map<string, InFlightReason>> {
    const found = new Map<string, InFlightReason>();
    if (orderIds.length === 0) return found;
    const projection = { state: 1, capturedMinor: 1, refundedMinor: 1, refundableMinor: 1, pendingAction: 1 };
    const [orders, pendingRefunds] = await Promise.all([
      this.orders.find({ _id: { $in: orderIds } }, { projection }).toArray(),
      this.refunds.distinct('orderId', { orderId: { $in: orderIds }, state: 'pending' }),
    ]);
    for (const orderId of pendingRefunds) found.set(orderId, 'refund_in_flight');
    for (const order of orders) {
      const reason = inFlightReason(order);
      if (reason && !found.has(order._id)) found.set(order._id, reason);
    }
    return found;
  }
}

/** Pure: an order's work in flight, from its own fields. */
export function inFlightReason(order: OrderMoneyDoc): InFlightReason | null {
  if (order.pendingAction) return 'action_in_flight';
  if (order.state === 'pending' || order.state === 'charged' || order.state === 'processing') return 'charge_in_flight';
  // A refund reserves its amount (refundableMinor) before the provider is asked and books it (refundedMinor) after.
  const reserved = (order.capturedMinor ?? 0) - (order.refundedMinor ?? 0) - (order.refundableMinor ?? 0);
  return order.capturedMinor !== undefined && order.refundableMinor !== undefined && reserved > 0 ? 'refund_in_flight' : null;
}
