import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { Clock } from '../../src/common/clock.js';
import {
  PaymentGateway,
  type AsyncChargeResult,
  type ChargeRequest,
  type ChargeResult,
  type ReconcileResult,
} from '../../src/payments/payment-gateway.port.js';
import { createStripeClient } from '../../src/payment-stripe/stripe-client.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { StripeRequestJournal, type JournalEntry } from '../../src/payment-stripe/stripe-request.journal.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { startApp, type TestApp } from '../support/test-app.js';

/**
 * The port's contract: the SAME tests run against every adapter - the
 * simulator, and the Stripe adapter talking real HTTP (the official SDK) to
 * the local Stripe fake, which checks every request and answer against
 * Stripe's OpenAPI subset. Only the test cards differ (each provider names
 * its own).
 */
interface Subject {
  name: string;
  gateway: () => PaymentGateway;
  tokens: { succeeds: string; declines: string };
  /** How many charges (money taken or held) the provider holds under a charge key. */
  chargesUnder: (chargeKey: string) => Promise<number>;
  /** After each test: what the provider-side checks found wrong ([] = nothing). */
  violations: () => string[];
  /**
   * Where the providers differ, and the port allows both, each adapter's own
   * answer - asserted exactly, so a change of either is a failing test:
   * - `afterDecline`: what reconciliation, then the order's retry (same
   *   card), answer under a key whose charge was declined;
   * - `processingPastBound`: processingOrCancel of a card payment still processing.
   */
  afterDecline: { reconcile: ReconcileResult; retry: ChargeResult };
  processingPastBound: AsyncChargeResult;
}

let t: TestApp;
const fake = new StripeFake();
let stripeGateway: StripePaymentGateway;
let journal: Collection<JournalEntry>;

beforeAll(async () => {
  t = await startApp({ dbName: 'test_gateway_contract' });
  await fake.start();
  journal = t.db.collection<JournalEntry>('stripe_requests');
  await journal.deleteMany({});
  stripeGateway = new StripePaymentGateway(
    createStripeClient({ secretKey: 'sk_test_fake0123456789', maxNetworkRetries: 0, timeoutMs: 5000, apiBase: fake.apiBase }),
    new StripeRequestJournal(journal),
    t.app.get(Clock),
    { retryAfterSeconds: 2 },
  );
});
afterAll(async () => {
  await fake.stop();
  await t.close();
});

const subjects: Subject[] = [
  {
    name: 'simulator',
    gateway: () => t.app.get(PaymentGateway),
    tokens: { succeeds: 'tok_visa', declines: 'tok_decline' },
    chargesUnder: async (chargeKey) =>
      t.simulatorDb.collection('charges').countDocuments({ _id: chargeKey as never, status: { $nin: ['canceled', 'declined'] } }),
    violations: () => [],
    // The simulator stores nothing for a decline, so the key held nothing: reconciliation cancels it. Its decline card
    // is declined before the key is read, so the retry is declined again (the canceled key would charge nothing either).
    afterDecline: { reconcile: { outcome: 'canceled' }, retry: { outcome: 'declined', reason: 'card_declined' } },
    // The simulator can cancel an asynchronous card payment while it processes.
    processingPastBound: { outcome: 'canceled' },
  },
  {
    name: 'stripe',
    gateway: () => stripeGateway,
    tokens: { succeeds: 'tok_visa', declines: 'tok_chargeDeclined' },
    chargesUnder: async (chargeKey) =>
      [...fake.intents.values()].filter(
        (intent) =>
          (intent.metadata as Record<string, string>).charge_key === chargeKey &&
          ['succeeded', 'requires_capture', 'processing'].includes(intent.status as string),
      ).length,
    violations: () => fake.violations.splice(0),
    // Stripe stores the decline (402) under the key and replays it: the key answers declined for 24 h.
    afterDecline: { reconcile: { outcome: 'declined', reason: 'card_declined' }, retry: { outcome: 'declined', reason: 'card_declined' } },
    // Stripe cannot cancel a processing PaymentIntent: money may still arrive, the order keeps waiting.
    processingPastBound: { outcome: 'still_processing', method: 'card' },
  },
];

const newChargeKey = () => `charge:ord_${randomBytes(12).toString('hex')}`;
const opKey = (kind: string) => `${kind}:${randomBytes(12).toString('hex')}`;

describe.each(subjects)('payment gateway contract: $name', (subject) => {
  const gateway = () => subject.gateway();
  const request = (chargeKey: string, token = subject.tokens.succeeds, amountMinor = 2500): ChargeRequest => ({
    chargeKey,
    amountMinor,
    currency: 'USD',
    paymentToken: token,
    reference: chargeKey.replace('charge:', ''),
  });

  afterEach(() => {
    expect(subject.violations()).toEqual([]);
  });

  it('charges once under a key: the same key answers the first charge', async () => {
    const key = newChargeKey();
    const first = await gateway().charge(request(key));
    const again = await gateway().charge(request(key));
    expect(first.outcome).toBe('succeeded');
    expect(again).toEqual(first);
    if (first.outcome !== 'succeeded') return;
    expect(first.charge).toMatchObject({ chargeKey: key, amountMinor: 2500, currency: 'USD' });
    expect(await subject.chargesUnder(key)).toBe(1);
  });

  it('a declined card is declined, and the same key answers declined again without charging', async () => {
    const key = newChargeKey();
    const first = await gateway().charge(request(key, subject.tokens.declines));
    expect(first).toEqual({ outcome: 'declined', reason: 'card_declined' });
    expect(await gateway().charge(request(key, subject.tokens.declines))).toEqual(first);
    expect(await subject.chargesUnder(key)).toBe(0);
  });

  it('reconciliation finds the charge made under a key', async () => {
    const key = newChargeKey();
    const charged = await gateway().charge(request(key));
    const found = await gateway().chargeOrCancel(key);
    expect(found.outcome).toBe('charged');
    if (found.outcome !== 'charged' || charged.outcome !== 'succeeded') return;
    expect(found.charge.id).toBe(charged.charge.id);
    expect(found.charge.amountMinor).toBe(2500);
  });

  it('reconciliation cancels a key nothing was charged under: a charge under it afterwards charges nothing', async () => {
    const key = newChargeKey();
    expect(await gateway().chargeOrCancel(key)).toEqual({ outcome: 'canceled' });
    expect(await gateway().charge(request(key))).toEqual({ outcome: 'canceled' });
    expect(await gateway().chargeOrCancel(key)).toEqual({ outcome: 'canceled' });
    expect(await subject.chargesUnder(key)).toBe(0);
  });

  it('reconciliation after a decline finds no money, and none can move under the key afterwards', async () => {
    const key = newChargeKey();
    await gateway().charge(request(key, subject.tokens.declines));
    expect(await gateway().chargeOrCancel(key)).toEqual(subject.afterDecline.reconcile);
    // The order's retry repeats its request (same card): nothing is charged.
    expect(await gateway().charge(request(key, subject.tokens.declines))).toEqual(subject.afterDecline.retry);
    expect(await subject.chargesUnder(key)).toBe(0);
  });

  it('authorizes, captures part once per key, and refuses a second capture under another key', async () => {
    const key = newChargeKey();
    const authorized = await gateway().authorize(request(key));
    expect(authorized.outcome).toBe('authorized');
    expect((await gateway().chargeOrCancel(key)).outcome).toBe('authorized');
    const captureKey = opKey('capture');
    const captured = await gateway().capture({ captureKey, chargeKey: key, amountMinor: 1500 });
    expect(captured).toMatchObject({
      outcome: 'succeeded',
      operation: { kind: 'capture', amountMinor: 1500, chargeKey: key, key: captureKey },
    });
    expect(await gateway().capture({ captureKey, chargeKey: key, amountMinor: 1500 })).toEqual(captured);
    expect(await gateway().capture({ captureKey: opKey('capture'), chargeKey: key, amountMinor: 1000 })).toEqual({
      outcome: 'refused',
      reason: 'already_captured',
    });
    expect(await gateway().operationOrCancel(captureKey)).toEqual(captured);
  });

  it('refuses a capture past the authorized amount', async () => {
    const key = newChargeKey();
    await gateway().authorize(request(key));
    expect(await gateway().capture({ captureKey: opKey('capture'), chargeKey: key, amountMinor: 2501 })).toEqual({
      outcome: 'refused',
      reason: 'exceeds_captured',
    });
  });

  it('voids an authorization once; a capture after the void is refused', async () => {
    const key = newChargeKey();
    await gateway().authorize(request(key));
    const voidKey = opKey('void');
    const voided = await gateway().void({ voidKey, chargeKey: key });
    expect(voided).toMatchObject({ outcome: 'succeeded', operation: { kind: 'void', amountMinor: 2500, key: voidKey } });
    expect(await gateway().void({ voidKey, chargeKey: key })).toEqual(voided);
    expect(await gateway().capture({ captureKey: opKey('capture'), chargeKey: key, amountMinor: 100 })).toEqual({
      outcome: 'refused',
      reason: 'authorization_voided',
    });
  });

  it('refunds once per key, never past what was captured', async () => {
    const key = newChargeKey();
    await gateway().charge(request(key));
    const refundKey = opKey('refund');
    const refunded = await gateway().refund({ refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' });
    expect(refunded).toMatchObject({
      outcome: 'succeeded',
      operation: { kind: 'refund', amountMinor: 1000, key: refundKey, chargeKey: key },
    });
    expect(await gateway().refund({ refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' })).toEqual(refunded);
    expect(await gateway().operationOrCancel(refundKey)).toEqual(refunded);
    expect(await gateway().refund({ refundKey: opKey('refund'), chargeKey: key, amountMinor: 1501, currency: 'USD' })).toEqual({
      outcome: 'refused',
      reason: 'exceeds_captured',
    });
    expect(await gateway().refund({ refundKey: opKey('refund'), chargeKey: key, amountMinor: 1500, currency: 'USD' })).toMatchObject({
      outcome: 'succeeded',
    });
  });

  it('a payment still processing past our bound is canceled where the provider can, else reported still processing - never concluded', async () => {
    const key = newChargeKey();
    expect(await gateway().charge(request(key, 'tok_async'))).toEqual({ outcome: 'processing' });
    const asked = await gateway().processingOrCancel(key);
    expect(asked).toEqual(subject.processingPastBound);
    expect(await gateway().processingOrCancel(key)).toEqual(asked);
    expect(await subject.chargesUnder(key)).toBe(asked.outcome === 'canceled' ? 0 : 1);
  });

  it('refuses a refund of a charge key that holds nothing', async () => {
    expect(await gateway().refund({ refundKey: opKey('refund'), chargeKey: newChargeKey(), amountMinor: 100, currency: 'USD' })).toEqual({
      outcome: 'refused',
      reason: 'no_such_payment',
    });
  });

  it('reconciliation cancels an operation key nothing was done under: a refund under it afterwards moves nothing', async () => {
    const key = newChargeKey();
    await gateway().charge(request(key));
    const refundKey = opKey('refund');
    expect(await gateway().operationOrCancel(refundKey)).toEqual({ outcome: 'canceled' });
    expect(await gateway().refund({ refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' })).toEqual({ outcome: 'canceled' });
    // Nothing was refunded: the whole amount is still refundable.
    expect(await gateway().refund({ refundKey: opKey('refund'), chargeKey: key, amountMinor: 2500, currency: 'USD' })).toMatchObject({
      outcome: 'succeeded',
    });
  });
});
