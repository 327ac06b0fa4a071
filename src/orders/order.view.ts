import type { LedgerEntry } from '../ledger/ledger-entry.js';
import { InvalidCursorError } from './orders.errors.js';
import { ORDER_ID_PATTERN, type Order } from './order.js';

/** The public shape of an order; a stored 201 body is exactly this, so keep it stable (bump schemaVersion otherwise). */
export function orderView(order: Order) {
  return {
    id: order._id,
    state: order.state,
    customerId: order.customerId,
    currency: order.currency,
    amountMinor: order.amountMinor,
    capture: order.capture ?? 'automatic',
    // Orders stored before these fields existed read as their state says: nothing refunded yet.
    authorizedMinor: order.authorizedMinor ?? 0,
    capturedMinor: order.capturedMinor ?? 0,
    refundedMinor: order.refundedMinor ?? 0,
    authorizationExpiresAt: order.authorizationExpiresAt ? order.authorizationExpiresAt.toISOString() : null,
    items: order.items.map((item) => ({ sku: item.sku, quantity: item.quantity, unitPriceMinor: item.unitPriceMinor })),
    paymentId: order.paymentId,
    failureReason: order.failureReason,
    createdAt: order.createdAt.toISOString(),
  };
}

export function ledgerView(entries: LedgerEntry[]) {
  return {
    entries: entries.map((entry) => ({
      journalId: entry.journalId,
      account: entry.account,
      direction: entry.direction,
      amountMinor: entry.amountMinor,
      currency: entry.currency,
    })),
  };
}

export function encodeCursor(position: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(String(createdAt));
    if (typeof id !== 'string' || !ORDER_ID_PATTERN.test(id) || Number.isNaN(date.getTime())) throw new Error('bad');
    return { createdAt: date, id };
  } catch {
    throw new InvalidCursorError();
  }
}
