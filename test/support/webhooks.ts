import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { chargeEvent, type ChargeEventType } from '../../src/payment-simulator/webhook-events.js';
import { WebhookSigner } from '../../src/payment-simulator/webhook-signer.js';
import type { ProviderEvent } from '../../src/payment-simulator/webhook-sender.js';
import type { TestApp } from './test-app.js';

/** A fresh Standard Webhooks secret (`whsec_` + 32 random bytes). */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** The Standard Webhooks body of an event, exactly as the simulator sends it. */
export const eventBody = (event: ProviderEvent) =>
  JSON.stringify({ type: event.type, timestamp: event.timestamp.toISOString(), data: event.data });

export interface Delivery {
  /** Sign with these (default: the test's current secret). */
  secrets?: string[];
  /** When the delivery was signed (default: now). */
  signedAt?: Date;
  /** The body sent (default: the event's); signed as sent unless `signedBody` says otherwise. */
  body?: string;
  signedBody?: string;
  /** Headers to drop, or to override. */
  omit?: string[];
  headers?: Record<string, string>;
}

/** Posts one signed delivery of `event`, as a provider would: no tenant key, application/json, the three headers. */
export function deliver(t: TestApp, secret: string, event: ProviderEvent, options: Delivery = {}) {
  const body = options.body ?? eventBody(event);
  const signer = new WebhookSigner(options.secrets ?? [secret]);
  const signed: Record<string, string> = { ...signer.sign(event.id, options.signedBody ?? body, options.signedAt ?? new Date()) };
  for (const name of options.omit ?? []) delete signed[name];
  return t
    .http()
    .post('/v1/webhooks/payments')
    .set('content-type', 'application/json')
    .set({ ...signed, ...options.headers })
    .send(body);
}

/** The event the simulator would send about the charge under `chargeKey` (its id and amount read from the provider). */
export async function eventFor(simulatorDb: Db, chargeKey: string, type: ChargeEventType, at = new Date()): Promise<ProviderEvent> {
  const charge = await simulatorDb.collection<{ _id: string; id: string; amountMinor: number; currency: string }>('charges').findOne({
    _id: chargeKey,
  });
  if (!charge) throw new Error(`No charge under ${chargeKey}`);
  return chargeEvent(type, { chargeKey, chargeId: charge.id, amountMinor: charge.amountMinor, currency: charge.currency }, at);
}

/** What one order left in the database: the counts the exactly-once promise is about. */
export async function effectsOf(db: Db, orderId: string) {
  const entries = await db.collection<{ direction: string; amountMinor: number }>('ledger_entries').find({ orderId }).toArray();
  const debits = entries.filter((e) => e.direction === 'debit').reduce((sum, e) => sum + e.amountMinor, 0);
  const credits = entries.filter((e) => e.direction === 'credit').reduce((sum, e) => sum + e.amountMinor, 0);
  return {
    state: (await db.collection<{ _id: string; state: string }>('orders').findOne({ _id: orderId }))?.state,
    payments: await db.collection('payments').countDocuments({ orderId }),
    ledgerLines: entries.length,
    balanced: debits === credits,
    completedEvents: await db.collection('outbox_events').countDocuments({ aggregateId: orderId, type: 'order.completed' }),
  };
}

export const SAVED_ONCE = { state: 'saved', payments: 1, ledgerLines: 4, balanced: true, completedEvents: 1 };
export const UNTOUCHED = { state: 'processing', payments: 0, ledgerLines: 0, balanced: true, completedEvents: 0 };
