/**
 * Where a payment stands: `succeeded` a charge (automatic capture);
 * `authorized` money held (manual capture), then `captured`, `voided`, or
 * `expired` (the authorization lapsed unused).
 */
export type PaymentStatus = 'succeeded' | 'authorized' | 'captured' | 'voided' | 'expired';

export const PAYMENT_STATUSES: readonly PaymentStatus[] = ['succeeded', 'authorized', 'captured', 'voided', 'expired'];

/** Our record of a charge or an authorization (payments collection). */
export interface Payment {
  _id: string;
  tenant: string;
  orderId: string;
  chargeKey: string;
  providerChargeId: string;
  amountMinor: number;
  currency: string;
  status: PaymentStatus;
  /** Manual capture, once captured: what was taken (at most amountMinor). */
  capturedMinor?: number;
  /** Manual capture, once captured or voided: the provider's capture or void operation. */
  providerOperationId?: string;
  createdAt: Date;
}

/** Our payment id of a provider charge or authorization: derived, so a resumed attempt writes the same one. */
export function paymentIdFor(providerChargeId: string): string {
  return `pay_${providerChargeId.replace(/^ch_/, '')}`;
}

/** The provider-side idempotency key of an order's charge: derived, never random. */
export function chargeKeyFor(orderId: string): string {
  return `charge:${orderId}`;
}
