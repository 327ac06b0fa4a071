/** Our record of a successful charge (payments collection). */
export interface Payment {
  _id: string;
  tenant: string;
  orderId: string;
  chargeKey: string;
  providerChargeId: string;
  amountMinor: number;
  currency: string;
  status: 'succeeded';
  createdAt: Date;
}

/** The provider-side idempotency key of an order's charge: derived, never random. */
export function chargeKeyFor(orderId: string): string {
  return `charge:${orderId}`;
}
