import Stripe from 'stripe';
import { STRIPE_API_VERSION } from './stripe-payment.gateway.js';
import type { StripeSettings } from './stripe.settings.js';

/**
 * The SDK client, API version pinned. maxNetworkRetries is deliberate:
 * every call carries our own derived Idempotency-Key, so the SDK's retry
 * (connection errors, 409 in flight, 5xx Stripe marks retryable) is a safe
 * replay; one quick retry absorbs the common lost answer without making the
 * waiting client pay for more, and anything longer is the service's own
 * resumable 503 + Retry-After (the client's retry, or the reaper, replays
 * under the same key). Stripe's default of 0 plus the SDK's one retry of a
 * closed connection would leave most blips to the client.
 */
export function createStripeClient(settings: Pick<StripeSettings, 'secretKey' | 'maxNetworkRetries' | 'timeoutMs' | 'apiBase'>): Stripe {
  return new Stripe(settings.secretKey, {
    apiVersion: STRIPE_API_VERSION,
    maxNetworkRetries: settings.maxNetworkRetries,
    timeout: settings.timeoutMs,
    telemetry: false,
    appInfo: { name: 'idempotent-orders' },
    ...(settings.apiBase ?? {}),
  });
}
