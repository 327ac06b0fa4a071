import { DomainError } from '../common/domain-error.js';

export interface ChargeRequest {
  /** Derived from the order: the provider deduplicates on it, so a resumed charge returns the first one. */
  chargeKey: string;
  amountMinor: number;
  currency: string;
  paymentToken: string;
  reference: string;
}

export interface Charge {
  id: string;
  chargeKey: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
}

/** Money held on the card under a charge key (manual capture), until captured, voided or lapsed. */
export interface Authorization extends Charge {
  expiresAt: Date;
}

export type ChargeResult =
  | { outcome: 'succeeded'; charge: Charge }
  | { outcome: 'declined'; reason: string }
  /** Asynchronous methods (3-D Secure, bank transfers): the outcome comes later, by webhook. */
  | { outcome: 'processing' }
  /** The charge key was canceled by reconciliation: this attempt was abandoned and must not charge. */
  | { outcome: 'canceled' };

export type AuthorizeResult =
  { outcome: 'authorized'; authorization: Authorization } | { outcome: 'declined'; reason: string } | { outcome: 'canceled' };

/** What the provider holds under a charge key, for the reaper; `canceled` when it held nothing and now never will. */
export type ReconcileResult =
  | { outcome: 'charged'; charge: Charge }
  | { outcome: 'authorized'; authorization: Authorization }
  | { outcome: 'processing' }
  | { outcome: 'declined'; reason: string }
  | { outcome: 'canceled' };

/** The kinds of asynchronous payment, as far as the bound on `processing` cares (each has its own: PROCESSING_BOUND_*). */
export type AsyncPaymentMethod = 'card' | 'bank_transfer';

/** An asynchronous charge asked about past our bound: its outcome, canceled at the provider (it never settles now), or neither. */
export type AsyncChargeResult =
  | { outcome: 'succeeded'; charge: Charge }
  | { outcome: 'declined'; reason: string }
  | { outcome: 'canceled' }
  /**
   * Still processing, and the provider cannot cancel it now (a bank transfer
   * or debit stays processing for days; Stripe cancels a processing
   * PaymentIntent only "in rare cases"): money may still arrive, so the
   * order must keep waiting. `method` says which bound applies.
   */
  | { outcome: 'still_processing'; method: AsyncPaymentMethod };

/** The money movements after a charge, each under its own key. */
export type OperationKind = 'capture' | 'void' | 'refund';

/** A capture, void or refund the provider made. */
export interface ProviderOperation {
  id: string;
  key: string;
  kind: OperationKind;
  chargeKey: string;
  /** The amount captured or refunded; a void moves the whole authorization (its amount). */
  amountMinor: number;
  currency: string;
  createdAt: Date;
}

/**
 * Why the provider refused an operation. Refusals are final and stored
 * under the operation's key like a success: the same key answers the same.
 */
export type RefusalReason =
  /** Refunds: the issuer declined. */
  | 'declined'
  /** Capture or void of an authorization that lapsed. */
  | 'authorization_expired'
  /** Capture of a voided authorization. */
  | 'authorization_voided'
  /** Capture or void of an authorization another key already captured. */
  | 'already_captured'
  /** Refund past what was captured and not yet refunded. */
  | 'exceeds_captured'
  /** Nothing under the charge key the operation names, or nothing in the state it needs (a refund of an authorization). */
  | 'no_such_payment';

export type OperationResult =
  | { outcome: 'succeeded'; operation: ProviderOperation }
  | { outcome: 'refused'; reason: RefusalReason }
  /** The key was canceled by reconciliation (operationOrCancel): nothing happened, and nothing will under it. */
  | { outcome: 'canceled' };

export interface CaptureRequest {
  captureKey: string;
  chargeKey: string;
  /** At most the authorized amount; the rest of the authorization is released. */
  amountMinor: number;
}

export interface VoidRequest {
  voidKey: string;
  chargeKey: string;
}

export interface RefundRequest {
  refundKey: string;
  chargeKey: string;
  amountMinor: number;
  currency: string;
}

/** Transient: nothing was charged, or we cannot know; never stored, the client retries. */
export class PaymentProviderUnavailableError extends DomainError {
  readonly code = 'payment_provider_unavailable';
  constructor(retryAfterSeconds: number) {
    super('The payment provider is unavailable; retry later with the same Idempotency-Key.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * The port to a payment provider. Every call carries a key the caller
 * derives from its own ids, and implementations must deduplicate on it (a
 * repeated call answers what the first did) and let reconciliation look it
 * up - cancelling the key when nothing was done under it, so that a slow
 * worker still holding it can never act afterwards (like cancelling a
 * payment intent). Not every provider offers both as such: Stripe has no
 * look-up by idempotency key and forgets keys after 24 h, so its adapter
 * builds them from a journal of its requests, a tombstone request and the
 * Search API (docs/providers/stripe.md).
 */
export abstract class PaymentGateway {
  /** Authorize and capture at once (automatic capture), or answer `processing` for an asynchronous method. */
  abstract charge(request: ChargeRequest): Promise<ChargeResult>;
  /** Manual capture: hold the amount until captured, voided or lapsed. Same key space as charge(). */
  abstract authorize(request: ChargeRequest): Promise<AuthorizeResult>;
  /**
   * For the reaper: what was done under this charge key, if anything;
   * otherwise cancel the key atomically so nobody can charge under it later.
   */
  abstract chargeOrCancel(chargeKey: string): Promise<ReconcileResult>;
  /**
   * For an order waiting on an asynchronous charge past our bound (no
   * webhook came): the charge's outcome, or - still processing - cancel it
   * atomically at the provider, so the order can fail knowing no money moves.
   * It maps to a cancel only where the provider allows one: a charge it
   * cannot cancel while processing answers `still_processing` and stays as
   * it is (never an error, never canceled by force).
   */
  abstract processingOrCancel(chargeKey: string): Promise<AsyncChargeResult>;
  abstract capture(request: CaptureRequest): Promise<OperationResult>;
  abstract void(request: VoidRequest): Promise<OperationResult>;
  /**
   * `succeeded` is booked as done, yet a provider may fail a refund after
   * answering so (Stripe: a card refund `succeeded` or `pending` fails days
   * later, the money back with the merchant). That comes as a provider event,
   * not an answer of this port: `refund.failed` into the webhook inbox
   * (webhooks/payment-event.ts), named by the refund key, which the inbox
   * books (refunds/refund-failure.ts). The simulator's refunds are final at
   * once: it never sends one.
   */
  abstract refund(request: RefundRequest): Promise<OperationResult>;
  /** For the reaper: the capture, void or refund made under this key, or cancel the key. */
  abstract operationOrCancel(key: string): Promise<OperationResult>;

  /**
   * Why the provider would refuse to charge this amount in this currency
   * (its minimum, its maximum, its rounding), or null. Asked before an order
   * is claimed, so such a total is a 422, never a 500 after the claim. The
   * default accepts any amount (the simulator does).
   */
  amountRefusal(amountMinor: number, currency: string): string | null {
    void amountMinor;
    void currency;
    return null;
  }
}
