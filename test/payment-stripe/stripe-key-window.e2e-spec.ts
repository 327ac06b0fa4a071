import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { Clock } from '../../src/common/clock.js';
import { PaymentProviderUnavailableError, type ChargeRequest } from '../../src/payments/payment-gateway.port.js';
import { createStripeClient } from '../../src/payment-stripe/stripe-client.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { StripeRequestJournal, type JournalEntry } from '../../src/payment-stripe/stripe-request.journal.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { startApp, type TestApp } from '../support/test-app.js';

const HOUR = 60 * 60 * 1000;
const LATER = 25 * HOUR;

/** A clock a test moves: "a day later" for the gateway as for the fake. */
class MovableClock extends Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/**
 * Past Stripe's 24 h key retention a replay under the key is a NEW request
 * (issue 49 item 1). Whoever asks - a client's retry on the request path or
 * the reaper - the adapter looks the object up and answers what it shows;
 * only "nothing there" may send, and then once. Each case loses the first
 * answer after the money moved (the SDK's own retry of a closed connection
 * too), then repeats the same call 25 h later, when the fake has forgotten
 * the key like Stripe does.
 */
describe('Stripe adapter: past the 24 h key window, look up, never send again', () => {
  let t: TestApp;
  const fake = new StripeFake();
  const clock = new MovableClock();
  let journal: Collection<JournalEntry>;
  let gateway: StripePaymentGateway;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_stripe_key_window' });
    await fake.start();
    journal = t.db.collection<JournalEntry>('stripe_requests');
    gateway = new StripePaymentGateway(
      createStripeClient({ secretKey: 'sk_test_fake0123456789', maxNetworkRetries: 0, timeoutMs: 5000, apiBase: fake.apiBase }),
      new StripeRequestJournal(journal),
      clock,
      { retryAfterSeconds: 2 },
    );
  });
  beforeEach(async () => {
    fake.reset();
    clock.offsetMs = 0;
    await journal.deleteMany({});
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await fake.stop();
    await t.close();
  });

  const newKey = () => `charge:ord_${randomBytes(12).toString('hex')}`;
  const request = (chargeKey: string): ChargeRequest => ({
    chargeKey,
    amountMinor: 2500,
    currency: 'USD',
    paymentToken: 'tok_visa',
    reference: chargeKey.slice('charge:'.length),
  });
  /** The answer is lost twice: the SDK retries a closed connection once even at 0 retries. */
  const loseAnswers = (path: RegExp) => {
    fake.inject('lose_answer', path);
    fake.inject('lose_answer', path);
  };
  const aDayLater = () => {
    fake.clockOffsetMs = LATER;
    clock.offsetMs = LATER;
  };
  const postsUnder = (key: string) => fake.requests.filter((r) => r.method === 'POST' && r.key === key);
  const intentsUnder = (key: string) =>
    [...fake.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).charge_key === key && pi.status !== 'canceled');
  const refundsUnder = (key: string) =>
    [...fake.refunds.values()].filter((re) => (re.metadata as Record<string, string>).refund_key === key);

  it('a charge retried past the window answers the PaymentIntent it made: one PaymentIntent under the key', async () => {
    const key = newKey();
    loseAnswers(/^\/v1\/payment_intents$/);
    await expect(gateway.charge(request(key))).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    expect(intentsUnder(key)).toHaveLength(1);
    aDayLater();
    const retried = await gateway.charge(request(key));
    expect(retried).toMatchObject({ outcome: 'succeeded', charge: { id: intentsUnder(key)[0].id, amountMinor: 2500 } });
    expect(intentsUnder(key)).toHaveLength(1);
    expect(postsUnder(key)).toHaveLength(2);
  });

  it('a refund retried past the window answers the refund it made: paid back once', async () => {
    const key = newKey();
    expect((await gateway.charge(request(key))).outcome).toBe('succeeded');
    const refundKey = `refund:${key}:1`;
    const refund = { refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' };
    loseAnswers(/^\/v1\/refunds$/);
    await expect(gateway.refund(refund)).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    aDayLater();
    const retried = await gateway.refund(refund);
    expect(retried).toMatchObject({ outcome: 'succeeded', operation: { id: refundsUnder(refundKey)[0]?.id, amountMinor: 1000 } });
    expect(refundsUnder(refundKey)).toHaveLength(1);
    expect(postsUnder(refundKey)).toHaveLength(2);
  });

  it('a capture retried past the window answers the capture Stripe made, never already_captured', async () => {
    const key = newKey();
    expect((await gateway.authorize(request(key))).outcome).toBe('authorized');
    const captureKey = `capture:${key}`;
    loseAnswers(/\/capture$/);
    await expect(gateway.capture({ captureKey, chargeKey: key, amountMinor: 2500 })).rejects.toBeInstanceOf(
      PaymentProviderUnavailableError,
    );
    expect(intentsUnder(key)[0].status).toBe('succeeded');
    aDayLater();
    const retried = await gateway.capture({ captureKey, chargeKey: key, amountMinor: 2500 });
    expect(retried).toMatchObject({ outcome: 'succeeded', operation: { kind: 'capture', amountMinor: 2500 } });
    expect(postsUnder(captureKey)).toHaveLength(2);
  });

  it('a void retried past the window answers the void Stripe made, never authorization_voided', async () => {
    const key = newKey();
    expect((await gateway.authorize(request(key))).outcome).toBe('authorized');
    const voidKey = `void:${key}`;
    loseAnswers(/\/cancel$/);
    await expect(gateway.void({ voidKey, chargeKey: key })).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    aDayLater();
    const retried = await gateway.void({ voidKey, chargeKey: key });
    expect(retried).toMatchObject({ outcome: 'succeeded', operation: { kind: 'void' } });
    expect(postsUnder(voidKey)).toHaveLength(2);
  });

  it('past the window with nothing at Stripe, the request path sends once - a first send - and the window starts again', async () => {
    const key = newKey();
    // Journaled a day ago, lost before it reached Stripe.
    await journal.insertOne({
      _id: key,
      call: { kind: 'charge', params: { ...stripeParams(key), error_on_requires_action: true } },
      chargeKey: key,
      firstSentAt: new Date(Date.now() - LATER),
      objectId: null,
    });
    const first = await gateway.charge(request(key));
    expect(first.outcome).toBe('succeeded');
    expect((await journal.findOne({ _id: key }))!.firstSentAt.getTime()).toBeGreaterThan(Date.now() - HOUR);
    // The next retry is inside the new window: a replay under the key, answered from Stripe's store.
    fake.searchLagMs = 60_000;
    const again = await gateway.charge(request(key));
    expect(again).toEqual(first);
    expect(intentsUnder(key)).toHaveLength(1);
  });

  it('past the window with nothing at Stripe, the reaper still cancels the key without sending (the same rule, its side)', async () => {
    const key = newKey();
    const refundKey = `refund:${key}:1`;
    expect((await gateway.charge(request(key))).outcome).toBe('succeeded');
    await journal.insertOne({
      _id: refundKey,
      call: { kind: 'refund', params: { payment_intent: intentsUnder(key)[0].id, amount: 1000, metadata: { refund_key: refundKey } } },
      chargeKey: key,
      firstSentAt: new Date(Date.now() - LATER),
      objectId: null,
    });
    aDayLater();
    expect(await gateway.operationOrCancel(refundKey)).toEqual({ outcome: 'canceled' });
    expect(postsUnder(refundKey)).toHaveLength(0);
    expect(await gateway.refund({ refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' })).toEqual({ outcome: 'canceled' });
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
