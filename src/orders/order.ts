import type { OrderState } from './order-state.js';

export interface OrderItem {
  sku: string;
  quantity: number;
  unitPriceMinor: number;
}

/** The plain-object shape of an orders document. */
export interface Order {
  _id: string;
  tenant: string;
  customerId: string;
  currency: string;
  items: OrderItem[];
  amountMinor: number;
  /** Token of the payment method; kept until the order is final, then removed. */
  paymentToken: string | null;
  state: OrderState;
  /** When each state was entered; the machine is acyclic, so one time per state. */
  stateHistory: Partial<Record<OrderState, Date>>;
  failureReason: string | null;
  paymentId: string | null;
  idempotency: { recordId: string; attempt: number };
  createdAt: Date;
  updatedAt: Date;
}

/** The order id is derived from the idempotency claim: one order per attempt, found again on resume. */
export function orderIdForClaim(claimId: string): string {
  return `ord_${claimId.slice(0, 24)}`;
}

export const ORDER_ID_PATTERN = /^ord_[0-9a-f]{24}$/;
