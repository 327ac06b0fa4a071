import type { Refund } from './refund.js';

/** The public shape of a refund; a stored 201 body is exactly this, so keep it stable (bump the route's schemaVersion otherwise). */
export function refundView(refund: Refund) {
  return {
    id: refund._id,
    orderId: refund.orderId,
    state: refund.state,
    amountMinor: refund.amountMinor,
    currency: refund.currency,
    reason: refund.reason,
    failureReason: refund.failureReason,
    providerRefundId: refund.providerRefundId,
    createdAt: refund.createdAt.toISOString(),
  };
}

export type RefundView = ReturnType<typeof refundView>;

export function refundLocation(refund: Pick<Refund, '_id' | 'orderId'>): string {
  return `/v1/orders/${refund.orderId}/refunds/${refund._id}`;
}
