import type { OrderState } from './order-state.js';

export type CaptureMode = 'automatic' | 'manual';

export const CAPTURE_MODES: readonly CaptureMode[] = ['automatic', 'manual'];

/** The operations after a manual-capture create that move the authorized money (order-payments.controller.ts). */
export type PaymentActionKind = 'capture' | 'void';

/**
 * The capture or void that holds an authorized order right now: taken in the
 * operation's claim transaction by one conditional update (state authorized,
 * no other action), cleared in the transaction that finishes it. Whoever
 * resumes the operation (a retry, the reaper) finds the order by `claimId`.
 */
export interface PendingPaymentAction {
  kind: PaymentActionKind;
  /** The idempotency record of the operation; its lease fences every write. */
  recordId: string;
  /** The attempt's claim: the provider key derives from it (`capture:<claimId>`, `void:<claimId>`). */
  claimId: string;
  /** Capture: the amount to take (the authorized amount unless the request named less). Void: the authorized amount. */
  amountMinor: number;
  startedAt: Date;
}

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
  /** `automatic`: charged at create. `manual`: authorized at create, captured or voided later (POST .../capture, .../void). */
  capture: CaptureMode;
  /**
   * The money, in minor units, as the provider moved it: authorized (held on
   * the card), captured (taken; an automatic charge authorizes and captures
   * the whole amount at once) and refunded (refunds that succeeded).
   * refunded <= captured <= authorized <= amountMinor, always.
   */
  authorizedMinor: number;
  capturedMinor: number;
  refundedMinor: number;
  /**
   * Captured minus every refund that succeeded or is still in flight: what a
   * new refund may draw on. A refund reserves its amount here by a
   * conditional update in the transaction that creates it, and gives it back
   * if it fails, so racing refunds can never sum past the captured amount.
   */
  refundableMinor: number;
  /** Manual capture: when the provider lets the authorization lapse; null otherwise. */
  authorizationExpiresAt: Date | null;
  /** Manual capture: the capture or void in flight on this order, if any; null otherwise (and on orders stored before it existed: absent). */
  pendingAction?: PendingPaymentAction | null;
  /**
   * An asynchronous charge the provider could not cancel while processing
   * (AsyncChargeResult `still_processing`): the processing bound looks at
   * this order again only after this time. Absent or null otherwise.
   */
  processingCheckAfter?: Date | null;
  /** Token of the payment method; kept until the order is final, then removed. */
  paymentToken: string | null;
  state: OrderState;
  /** When each state was last entered (a refund that failed late can take an order back to a state it was in). */
  stateHistory: Partial<Record<OrderState, Date>>;
  failureReason: string | null;
  paymentId: string | null;
  idempotency: { recordId: string; attempt: number };
  createdAt: Date;
  updatedAt: Date;
}

/** Why an order failed. `processing_expired`: an asynchronous charge that had no outcome past the processing bound, canceled at the provider. */
export const FAILURE = { declined: 'card_declined', abandoned: 'abandoned', processingExpired: 'processing_expired' } as const;

/** The order id is derived from the idempotency claim: one order per attempt, found again on resume. */
export function orderIdForClaim(claimId: string): string {
  return `ord_${claimId.slice(0, 24)}`;
}

export const ORDER_ID_PATTERN = /^ord_[0-9a-f]{24}$/;
