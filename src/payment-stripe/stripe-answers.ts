import { isDeepStrictEqual } from 'node:util';
import type Stripe from 'stripe';
import type {
  AsyncPaymentMethod,
  Authorization,
  Charge,
  ChargeRequest,
  OperationKind,
  OperationResult,
  RefusalReason,
} from '../payments/payment-gateway.port.js';
import type { JournaledCall } from './stripe-request.journal.js';

/**
 * What the Stripe adapter sends and how it reads what comes back: the
 * request parameters it builds and the mapping of Stripe's objects and
 * refusals onto the payment gateway port. Pure functions, no I/O (the
 * gateway, stripe-payment.gateway.ts, makes the calls).
 */

type Intent = Stripe.PaymentIntent;

/** One Stripe call's answer, as the gateway maps it (stripe-payment.gateway.ts `call`). */
export type Answer<T> =
  | { ok: T }
  | { card: Stripe.errors.StripeCardError }
  | { invalid: Stripe.errors.StripeInvalidRequestError }
  /** The key turned out to be reconciliation's tombstone: nothing happens under it, ever. */
  | { canceled: true };

/** A card authorization lasts 7 days at Stripe (online card payments): the default when the charge's capture_before is not known. */
const AUTHORIZATION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

/** Cards settle in minutes; every other asynchronous method Stripe offers here (debits, transfers) takes days: the bank-transfer bound. */
export function asyncMethodOf(intent: Intent): AsyncPaymentMethod {
  const type = intent.payment_method_types?.[0] ?? 'card';
  return type === 'card' ? 'card' : 'bank_transfer';
}

/** Stripe's test card tokens name test PaymentMethods the same way: tok_visa -> pm_card_visa. A pm_ id is sent as it is. */
export function paymentMethodFor(token: string): string {
  return token.startsWith('tok_') ? `pm_card_${token.slice('tok_'.length)}` : token;
}

export function intentParams(request: ChargeRequest, kind: 'charge' | 'authorize'): Record<string, unknown> {
  return {
    amount: request.amountMinor,
    currency: request.currency.toLowerCase(),
    capture_method: kind === 'authorize' ? 'manual' : 'automatic',
    confirm: true,
    payment_method: paymentMethodFor(request.paymentToken),
    allowed_payment_method_types: ['card'],
    // This API has no step where the customer could authenticate: a card that needs 3-D Secure is declined by Stripe
    // (card_error authentication_required) instead of waiting in requires_action for an authentication that never comes.
    error_on_requires_action: true,
    metadata: { charge_key: request.chargeKey, reference: request.reference },
  };
}

/**
 * A charge journaled by the release before `error_on_requires_action`, the
 * same request otherwise: its retry after the deploy must repeat what was
 * sent under the key (Stripe refuses other parameters as idempotency_error).
 */
export function journaledByEarlierRelease(journaled: JournaledCall, current: JournaledCall): boolean {
  if (!('params' in journaled) || !('params' in current)) return false;
  if ('error_on_requires_action' in journaled.params) return false;
  return isDeepStrictEqual({ ...journaled.params, error_on_requires_action: current.params.error_on_requires_action }, current.params);
}

/** The request reconciliation binds a key to when nothing was sent under it: it moves no money (never confirmed). */
export function tombstoneParams(key: string): Stripe.PaymentIntentCreateParams {
  return { amount: 100, currency: 'usd', allowed_payment_method_types: ['card'], metadata: { tombstone_for: key } };
}

export function toCharge(intent: Intent, chargeKey: string): Charge {
  return {
    id: intent.id,
    chargeKey,
    amountMinor: intent.amount_received || intent.amount,
    currency: intent.currency.toUpperCase(),
    createdAt: new Date(intent.created * 1000),
  };
}

/** The card charge's capture deadline, when the PaymentIntent carries its latest charge expanded. */
export function captureBeforeOf(intent: Intent): Date | null {
  const charge = intent.latest_charge;
  const seconds = charge && typeof charge === 'object' ? charge.payment_method_details?.card?.capture_before : undefined;
  return typeof seconds === 'number' ? new Date(seconds * 1000) : null;
}

export function toAuthorization(intent: Intent, chargeKey: string): Authorization {
  const createdAt = new Date(intent.created * 1000);
  return {
    id: intent.id,
    chargeKey,
    amountMinor: intent.amount,
    currency: intent.currency.toUpperCase(),
    createdAt,
    expiresAt: new Date(createdAt.getTime() + AUTHORIZATION_LIFETIME_MS),
  };
}

export function succeeded(
  key: string,
  kind: OperationKind,
  chargeKey: string,
  chargeId: string | Stripe.Charge | null,
  intent: Intent,
  amountMinor: number,
): OperationResult {
  const id = typeof chargeId === 'string' ? chargeId : (chargeId?.id ?? intent.id);
  return {
    outcome: 'succeeded',
    operation: {
      id: kind === 'void' ? `${intent.id}:void` : id,
      key,
      kind,
      chargeKey,
      amountMinor,
      currency: intent.currency.toUpperCase(),
      createdAt: new Date((intent.canceled_at ?? intent.created) * 1000),
    },
  };
}

/** A Stripe refund as the port's outcome: whether it was just made or found again past the key window. */
export function refundOutcome(refund: Stripe.Refund, key: string, chargeKey: string): OperationResult {
  // `succeeded` or `pending` is booked as done; either can still fail days later (money back on our balance): Stripe then
  // sends refund.failed, which the inbox books as the refund failing (refunds/refund-failure.ts). `failed`/`canceled` now: refused.
  if (refund.status === 'failed' || refund.status === 'canceled') return { outcome: 'refused', reason: 'declined' };
  return {
    outcome: 'succeeded',
    operation: {
      id: refund.id,
      key,
      kind: 'refund',
      chargeKey,
      amountMinor: refund.amount,
      currency: refund.currency.toUpperCase(),
      createdAt: new Date(refund.created * 1000),
    },
  };
}

/** Why Stripe refused a capture or void, from the intent it returned with the error. */
export function authorizationRefusal(answer: Answer<unknown>): RefusalReason {
  if (!('invalid' in answer)) return 'no_such_payment';
  const error = answer.invalid;
  if (error.code === 'amount_too_large' || error.code === 'amount_too_small') return 'exceeds_captured';
  const intent = error.payment_intent;
  if (!intent) return 'no_such_payment';
  if (intent.status === 'succeeded') return 'already_captured';
  if (intent.status === 'canceled') {
    return intent.cancellation_reason === 'automatic' || intent.cancellation_reason === 'expired'
      ? 'authorization_expired'
      : 'authorization_voided';
  }
  return 'no_such_payment';
}

export function refundRefusal(answer: Answer<unknown>): RefusalReason {
  if ('card' in answer) return 'declined';
  if (!('invalid' in answer)) return 'no_such_payment';
  const code = answer.invalid.code;
  if (code === 'charge_already_refunded' || code === 'amount_too_large' || code === 'amount_too_small') return 'exceeds_captured';
  if (code === 'parameter_invalid_integer' && answer.invalid.param === 'amount') return 'exceeds_captured';
  return 'no_such_payment';
}

export function describe(answer: Answer<unknown>): string {
  if ('canceled' in answer) return 'canceled by reconciliation';
  if ('card' in answer) return `card_error ${answer.card.code ?? ''}`;
  if ('invalid' in answer) return `invalid_request_error ${answer.invalid.code ?? ''} ${answer.invalid.message}`;
  return 'ok';
}
