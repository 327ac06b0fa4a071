import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { Clock } from '../../src/common/clock.js';
import { PaymentProviderUnavailableError, type ChargeRequest } from '../../src/payments/payment-gateway.port.js';
import { createStripeClient } from '../../src/payment-stripe/stripe-client.js';
import { StripeIdempotencyKeyMisuseError } from '../../src/payment-stripe/stripe.errors.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { StripeRequestJournal, type JournalEntry } from '../../src/payment-stripe/stripe-request.journal.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { startApp, type TestApp } from '../support/test-app.js';

/**
 * The Stripe adapter under the fake's faults: whatever Stripe loses, stores
 * or refuses, one key moves money at most once, and the adapter's answer is
 * either the truth or "unavailable, retry" (never a guess).
 */
describe('Stripe adapter: exactly once under faults', () => {
  let t: TestApp;
  const fake = new StripeFake();
  let journal: Collection<JournalEntry>;
  const gateways: Record<'noRetry' | 'sdkRetry', StripePaymentGateway> = {} as never;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_stripe_adapter_faults' });
    await fake.start();
    journal = t.db.collection<JournalEntry>('stripe_requests');
    for (const [name, retries] of [
      ['noRetry', 0],
      ['sdkRetry', 1],
    ] as const) {
      gateways[name] = new StripePaymentGateway(
        createStripeClient({ secretKey: 'sk_test_fake0123456789', maxNetworkRetries: retries, timeoutMs: 5000, apiBase: fake.apiBase }),
        new StripeRequestJournal(journal),
        t.app.get(Clock),
        { retryAfterSeconds: 2 },
      );
    }
  });
  beforeEach(async () => {
    fake.reset();
    await journal.deleteMany({});
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await fake.stop();
    await t.close();
  });

  const newKey = () => `charge:ord_${randomBytes(12).toString('hex')}`;
  const request = (chargeKey: string, amountMinor = 2500, paymentToken = 'tok_visa'): ChargeRequest => ({
    chargeKey,
    amountMinor,
    currency: 'USD',
    paymentToken,
    reference: chargeKey.slice('charge:'.length),
  });
  /** PaymentIntents that hold money (taken or held) under the key. */
  const moneyUnder = (key: string) =>
    [...fake.intents.values()].filter(
      (pi) => (pi.metadata as Record<string, string>).charge_key === key && ['succeeded', 'requires_capture'].includes(pi.status as string),
    );

  it('without PAYMENT_PROVIDER=stripe the Stripe webhook door is not there: 404, nothing recorded', async () => {
    const event = { id: 'evt_not_for_us', type: 'payment_intent.succeeded', created: Math.floor(Date.now() / 1000), object: {} };
    const { payload, header } = fake.signed(event, 'whsec_any0123456789');
    await t
      .http()
      .post('/v1/webhooks/stripe')
      .set('content-type', 'application/json')
      .set('stripe-signature', header)
      .send(payload)
      .expect(404);
    expect(await t.db.collection('webhook_inbox').countDocuments({ _id: 'evt_not_for_us' as never })).toBe(0);
  });

  it("a lost answer is replayed by the SDK's one retry under our key: one PaymentIntent", async () => {
    const key = newKey();
    fake.inject('lose_answer', /^\/v1\/payment_intents$/);
    const result = await gateways.sdkRetry.charge(request(key));
    expect(result.outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
    expect(fake.requests.filter((r) => r.key === key).map((r) => r.status)).toEqual([0, 200]);
  });

  it("answers lost twice (the SDK retries a closed connection once even at 0 retries) are a 503; the client's retry gets the first PaymentIntent", async () => {
    const key = newKey();
    fake.inject('lose_answer', /^\/v1\/payment_intents$/);
    fake.inject('lose_answer', /^\/v1\/payment_intents$/);
    await expect(gateways.noRetry.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    const retried = await gateways.noRetry.charge(request(key));
    expect(retried.outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
    if (retried.outcome === 'succeeded') expect(retried.charge.id).toBe(moneyUnder(key)[0].id);
  });

  it('a 5xx after the money moved is stored by Stripe under the key: the adapter finds the PaymentIntent by metadata once searchable', async () => {
    const key = newKey();
    fake.searchLagMs = 1500;
    fake.inject('server_error_after', /^\/v1\/payment_intents$/);
    await expect(gateways.sdkRetry.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    // The replay answers the stored 500, and the search index has not caught up: still "retry later", never "nothing happened".
    await expect(gateways.noRetry.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    await expect(gateways.noRetry.chargeOrCancel(key)).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const found = await gateways.noRetry.chargeOrCancel(key);
    expect(found.outcome).toBe('charged');
    const retried = await gateways.noRetry.charge(request(key));
    expect(retried.outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
  });

  it('409 while the same key is in flight is transient; the retry answers the one PaymentIntent', async () => {
    const key = newKey();
    fake.inject('in_flight', /^\/v1\/payment_intents$/);
    await expect(gateways.noRetry.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    expect((await gateways.noRetry.charge(request(key))).outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
  });

  it('two concurrent charges under one key: Stripe runs one, answers the other 409, and both end with the same PaymentIntent', async () => {
    const key = newKey();
    fake.executeDelayMs = 300;
    const results = await Promise.allSettled([gateways.noRetry.charge(request(key)), gateways.noRetry.charge(request(key))]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = results.find((r) => r.status === 'rejected')!;
    expect(rejected.reason).toBeInstanceOf(PaymentProviderUnavailableError);
    expect(fake.requests.filter((r) => r.key === key).map((r) => r.status)).toContain(409);
    fake.executeDelayMs = 0;
    expect((await gateways.noRetry.charge(request(key))).outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
  });

  it('429 and 503 are transient; nothing is stored and the retry charges once', async () => {
    const key = newKey();
    fake.inject('unavailable', /^\/v1\/payment_intents$/);
    await expect(gateways.noRetry.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    expect(moneyUnder(key)).toHaveLength(0);
    expect((await gateways.noRetry.charge(request(key))).outcome).toBe('succeeded');
    expect(moneyUnder(key)).toHaveLength(1);
  });

  it('idempotency_error (the key carried another request) is a loud internal error, never a second charge', async () => {
    const key = newKey();
    expect((await gateways.noRetry.charge(request(key, 2500))).outcome).toBe('succeeded');
    // Same key, other amount: what a wrong key derivation would send. The journal holds the first; Stripe refuses the second.
    await journal.deleteOne({ _id: key });
    await expect(gateways.noRetry.charge(request(key, 9900))).rejects.toBeInstanceOf(StripeIdempotencyKeyMisuseError);
    expect(moneyUnder(key)).toHaveLength(1);
    expect(moneyUnder(key)[0].amount).toBe(2500);
  });

  it('the reaper cancels a key a slow worker journaled but never sent: the worker then charges nothing', async () => {
    const key = newKey();
    // The worker wrote its journal entry and stalled before its HTTP request left.
    await journal.insertOne({
      _id: key,
      call: { kind: 'charge', params: stripeParams(key) },
      chargeKey: key,
      firstSentAt: new Date(),
      objectId: null,
    });
    expect(await gateways.noRetry.chargeOrCancel(key)).toEqual({ outcome: 'canceled' });
    // The worker wakes up and sends its request (journal read before the cancel): Stripe refuses it, the tombstone answers.
    await journal.updateOne({ _id: key }, { $set: { call: { kind: 'charge', params: stripeParams(key) } } });
    expect(await gateways.noRetry.charge(request(key))).toEqual({ outcome: 'canceled' });
    expect(moneyUnder(key)).toHaveLength(0);
    const tombstones = [...fake.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).tombstone_for === key);
    expect(tombstones.map((pi) => pi.status)).toEqual(['canceled']);
  });

  it('past the 24 h key window the reaper never replays (that would charge anew): it finds the PaymentIntent by metadata', async () => {
    const key = newKey();
    const charged = await gateways.noRetry.charge(request(key));
    const intents = fake.intents.size;
    // A day later: Stripe has forgotten the key, our journal entry is old.
    fake.clockOffsetMs = 25 * 60 * 60 * 1000;
    await journal.updateOne({ _id: key }, { $set: { firstSentAt: new Date(Date.now() - 25 * 60 * 60 * 1000), objectId: null } });
    const found = await gateways.noRetry.chargeOrCancel(key);
    expect(found.outcome).toBe('charged');
    if (found.outcome === 'charged' && charged.outcome === 'succeeded') expect(found.charge.id).toBe(charged.charge.id);
    expect(fake.intents.size).toBe(intents);
    expect(fake.requests.filter((r) => r.method === 'POST' && r.key === key)).toHaveLength(1);
  });

  it('past the window a key that never reached Stripe is canceled, without sending anything under it', async () => {
    const key = newKey();
    await journal.insertOne({
      _id: key,
      call: { kind: 'charge', params: stripeParams(key) },
      chargeKey: key,
      firstSentAt: new Date(Date.now() - 25 * 60 * 60 * 1000),
      objectId: null,
    });
    expect(await gateways.noRetry.chargeOrCancel(key)).toEqual({ outcome: 'canceled' });
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(await gateways.noRetry.charge(request(key))).toEqual({ outcome: 'canceled' });
  });

  it('a processing payment Stripe will not cancel answers still_processing (the order keeps waiting), then its outcome', async () => {
    const key = newKey();
    expect(await gateways.noRetry.charge(request(key, 2500, 'tok_async'))).toEqual({ outcome: 'processing' });
    expect(await gateways.noRetry.processingOrCancel(key)).toEqual({ outcome: 'still_processing', method: 'card' });
    const intent = [...fake.intents.values()].find((pi) => (pi.metadata as Record<string, string>).charge_key === key)!;
    expect(intent.status).toBe('processing');
    fake.settle(intent.id as string, 'succeeded');
    expect(await gateways.noRetry.processingOrCancel(key)).toMatchObject({ outcome: 'succeeded', charge: { id: intent.id } });
  });
});

function stripeParams(key: string): Record<string, unknown> {
  return {
    amount: 2500,
    currency: 'usd',
    capture_method: 'automatic',
    confirm: true,
    payment_method: 'pm_card_visa',
    allowed_payment_method_types: ['card'],
    metadata: { charge_key: key, reference: key.slice('charge:'.length) },
  };
}
