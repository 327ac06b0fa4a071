import type Stripe from 'stripe';
import type { PaymentEvent } from '../webhooks/payment-event.js';

/**
 * Stripe's events in the inbox's words. The PaymentIntent events that move
 * an order map to the charge events the inbox acts on; every other type
 * (and a PaymentIntent without our charge key: a reconciliation tombstone,
 * or not ours) is recorded and acknowledged as an unknown type.
 *
 * Duplicates: the inbox keys on Stripe's event id (evt_...), the same on
 * every delivery. Out of order: `created` has one-second resolution and
 * Stripe does not order deliveries, so the event's place in the intent's
 * life decides - processing (1) before an outcome (2) - and the order's
 * state machine refuses anything after a final state. `created` is the
 * time the event happened.
 */
const MAPPED: Record<string, { type: 'charge.processing' | 'charge.succeeded' | 'charge.failed'; sequence: number }> = {
  'payment_intent.processing': { type: 'charge.processing', sequence: 1 },
  'payment_intent.succeeded': { type: 'charge.succeeded', sequence: 2 },
  'payment_intent.payment_failed': { type: 'charge.failed', sequence: 2 },
};

export function paymentEventOf(event: Stripe.Event): PaymentEvent {
  const occurredAt = new Date(event.created * 1000);
  const mapped = MAPPED[event.type];
  const intent = event.data.object as Partial<Stripe.PaymentIntent>;
  const chargeKey = intent.metadata?.charge_key;
  if (!mapped || intent.object !== 'payment_intent' || !chargeKey || !intent.id || !intent.currency) {
    return { id: event.id, type: `stripe.${event.type}`, occurredAt, charge: null };
  }
  return {
    id: event.id,
    type: mapped.type,
    occurredAt,
    charge: {
      chargeKey,
      chargeId: intent.id,
      amountMinor: intent.amount_received || intent.amount || 0,
      currency: intent.currency.toUpperCase(),
      sequence: mapped.sequence,
      failureReason: mapped.type === 'charge.failed' ? (intent.last_payment_error?.code ?? 'card_declined') : null,
    },
  };
}
