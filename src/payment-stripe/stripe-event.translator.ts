import type Stripe from 'stripe';
import { REFUND_FAILED_EVENT, type PaymentEvent } from '../webhooks/payment-event.js';

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

/**
 * A refund Stripe answered `succeeded` or `pending` can fail days later
 * (money back on our balance): Stripe says so by refund.failed, and by
 * refund.updated / charge.refund.updated with status `failed`. Each is
 * mapped to the inbox's refund.failed by our refund key (the refund's
 * metadata, set by the adapter); the inbox applies the first and finds the
 * refund already failed on the others.
 */
const REFUND_FAILURE_TYPES = ['refund.failed', 'refund.updated', 'charge.refund.updated'];

export function paymentEventOf(event: Stripe.Event): PaymentEvent {
  const occurredAt = new Date(event.created * 1000);
  if (REFUND_FAILURE_TYPES.includes(event.type)) return refundEventOf(event, occurredAt);
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

function refundEventOf(event: Stripe.Event, occurredAt: Date): PaymentEvent {
  const refund = event.data.object as Partial<Stripe.Refund>;
  const refundKey = refund.metadata?.refund_key;
  if (refund.object !== 'refund' || refund.status !== 'failed' || !refundKey || !refund.id || !refund.currency || !refund.amount) {
    return { id: event.id, type: `stripe.${event.type}`, occurredAt, charge: null };
  }
  return {
    id: event.id,
    type: REFUND_FAILED_EVENT,
    occurredAt,
    charge: null,
    refund: {
      refundKey,
      providerRefundId: refund.id,
      amountMinor: refund.amount,
      currency: refund.currency.toUpperCase(),
      failureReason: refund.failure_reason ?? 'unknown',
    },
  };
}
