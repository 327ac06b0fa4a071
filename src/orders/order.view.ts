import type { LedgerEntry } from '../ledger/ledger-entry.js';
import type { Order } from './order.js';

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
