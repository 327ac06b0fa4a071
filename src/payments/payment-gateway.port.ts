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

export type ChargeResult =
  | { outcome: 'succeeded'; charge: Charge }
  | { outcome: 'declined'; reason: string }
  /** The charge key was canceled by reconciliation: this attempt was abandoned and must not charge. */
  | { outcome: 'canceled' };

export type ReconcileResult = { outcome: 'charged'; charge: Charge } | { outcome: 'canceled' };

/** Transient: nothing was charged, or we cannot know; never stored, the client retries. */
export class PaymentProviderUnavailableError extends DomainError {
  readonly code = 'payment_provider_unavailable';
  constructor(retryAfterSeconds: number) {
    super('The payment provider is unavailable; retry later with the same Idempotency-Key.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * The port to a payment provider. Implementations must deduplicate on
 * `chargeKey`, and for reconciliation look a charge up by it - cancelling
 * the key when there is none (chargeOrCancel).
 */
export abstract class PaymentGateway {
  abstract charge(request: ChargeRequest): Promise<ChargeResult>;
  /**
   * For the reaper: the charge made under this key if there is one, otherwise
   * cancel the key atomically so that a slow worker still holding it can
   * never charge afterwards (like canceling a payment intent).
   */
  abstract chargeOrCancel(chargeKey: string): Promise<ReconcileResult>;
}
