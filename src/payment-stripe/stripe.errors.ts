import { PaymentProviderUnavailableError } from '../payments/payment-gateway.port.js';

/**
 * Stripe answered `idempotency_error` (400): the key was first used with
 * other parameters, or on another endpoint. Our keys are derived from our
 * own ids, so this means the derivation is wrong (two different requests
 * got one key) - a bug to page about, never something to retry under a new
 * key: a new key would charge a second time. Deliberately not a
 * DomainError: it surfaces as a 500, is never stored, and is logged loudly.
 */
export class StripeIdempotencyKeyMisuseError extends Error {
  constructor(
    readonly key: string,
    readonly kind: string,
    detail: string,
  ) {
    super(`Stripe refused the ${kind} idempotency key ${key} as used with other parameters: our key derivation is wrong (${detail})`);
    this.name = 'StripeIdempotencyKeyMisuseError';
  }
}

/** Stripe answered something the adapter has no mapping for: a 500, never stored, with what Stripe said (no secrets). */
export class StripeUnexpectedAnswerError extends Error {
  constructor(detail: string) {
    super(`Unexpected answer from Stripe: ${detail}`);
    this.name = 'StripeUnexpectedAnswerError';
  }
}

/**
 * A 5xx from Stripe. Transient for the client like any outage (503 +
 * Retry-After), but Stripe stores a 5xx under the key and replays it for 24
 * hours, even when the money moved before it: the adapter then looks the
 * PaymentIntent up by its metadata instead of replaying.
 */
export class StripeServerError extends PaymentProviderUnavailableError {
  constructor(
    retryAfterSeconds: number,
    /** Stripe answered from its store (`Idempotent-Replayed: true`): the key's request ended in this 5xx, and nothing more runs under it. */
    readonly replayed = false,
  ) {
    super(retryAfterSeconds);
  }
}
