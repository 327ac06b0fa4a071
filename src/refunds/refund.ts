/** A refund's own states: pending while the provider is asked, then final. */
export type RefundState = 'pending' | 'succeeded' | 'failed';

export const REFUND_STATES: readonly RefundState[] = ['pending', 'succeeded', 'failed'];

/** Why a client refunds (Stripe's reasons); `key_canceled` is the service's own (cancel by key). Never free text: no personal data. */
export type RefundReason = 'requested_by_customer' | 'duplicate' | 'fraudulent' | 'key_canceled';

export const REFUND_REASONS: readonly RefundReason[] = ['requested_by_customer', 'duplicate', 'fraudulent', 'key_canceled'];

/** What a client may send; `key_canceled` is only ever set by the service. */
export const CLIENT_REFUND_REASONS: readonly RefundReason[] = ['requested_by_customer', 'duplicate', 'fraudulent'];

/**
 * Why a refund failed: the provider's refusal (stored and replayed under
 * the key), or `abandoned` - the reaper found nothing done under its
 * provider key and canceled it (nothing stored; a retry of the key is a new
 * refund with a new provider key) - or `failed_at_provider`: the provider
 * answered succeeded, then failed the refund later (refund-failure.ts; the
 * key's stored 201 stays as it was answered, the refund reads failed).
 */
export const REFUND_FAILURE = {
  declined: 'declined',
  exceedsCaptured: 'exceeds_captured',
  noSuchPayment: 'no_such_payment',
  abandoned: 'abandoned',
  failedAtProvider: 'failed_at_provider',
} as const;

export type RefundFailure = (typeof REFUND_FAILURE)[keyof typeof REFUND_FAILURE];

/** The plain-object shape of a refunds document. */
export interface Refund {
  /** `re_<24 hex>`, derived from the idempotency claim: one refund per attempt, found again on resume. */
  _id: string;
  tenant: string;
  orderId: string;
  amountMinor: number;
  /** The order's currency. */
  currency: string;
  reason: RefundReason;
  state: RefundState;
  failureReason: RefundFailure | null;
  /** The key the provider deduplicates this refund on, derived from the refund id (unique). */
  providerKey: string;
  /** The provider's id of the refund, once it succeeded. */
  providerRefundId: string | null;
  idempotency: { recordId: string; attempt: number };
  stateHistory: Partial<Record<RefundState, Date>>;
  createdAt: Date;
  updatedAt: Date;
}

export function refundIdForClaim(claimId: string): string {
  return `re_${claimId.slice(0, 24)}`;
}

export const REFUND_ID_PATTERN = /^re_[0-9a-f]{24}$/;

/** The provider-side key of a refund: derived, never random, so a resumed call returns the first refund. */
export function refundKeyFor(refundId: string): string {
  return `refund:${refundId}`;
}
