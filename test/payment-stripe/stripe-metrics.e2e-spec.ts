import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { Clock } from '../../src/common/clock.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { PaymentProviderUnavailableError, type ChargeRequest } from '../../src/payments/payment-gateway.port.js';
import { createStripeClient } from '../../src/payment-stripe/stripe-client.js';
import { StripeIdempotencyKeyMisuseError } from '../../src/payment-stripe/stripe.errors.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { StripeRequestJournal, type JournalEntry } from '../../src/payment-stripe/stripe-request.journal.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { startApp, type TestApp } from '../support/test-app.js';

/**
 * The adapter's metrics: every call to Stripe counted by operation and
 * outcome (stripe_requests_total) and timed (stripe_request_duration_seconds),
 * read from the registry /metrics serves.
 */
describe('Stripe adapter metrics', () => {
  let t: TestApp;
  const fake = new StripeFake();
  let journal: Collection<JournalEntry>;
  let metrics: MetricsService;
  let gateway: StripePaymentGateway;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_stripe_metrics' });
    await fake.start();
    journal = t.db.collection<JournalEntry>('stripe_requests');
  });
  beforeEach(async () => {
    fake.reset();
    await journal.deleteMany({});
    metrics = new MetricsService();
    gateway = new StripePaymentGateway(
      createStripeClient({ secretKey: 'sk_test_fake0123456789', maxNetworkRetries: 0, timeoutMs: 5000, apiBase: fake.apiBase }),
      new StripeRequestJournal(journal),
      t.app.get(Clock),
      { retryAfterSeconds: 2 },
      metrics.stripe,
    );
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await fake.stop();
    await t.close();
  });

  const request = (paymentToken = 'tok_visa', amountMinor = 2500): ChargeRequest => {
    const chargeKey = `charge:ord_${randomBytes(12).toString('hex')}`;
    return { chargeKey, amountMinor, currency: 'USD', paymentToken, reference: chargeKey.slice('charge:'.length) };
  };
  /** stripe_requests_total by outcome, for one operation, as the registry exports it. */
  const counted = async (operation: string) => {
    const metric = await metrics.registry.getSingleMetric('stripe_requests_total')!.get();
    return Object.fromEntries(metric.values.filter((v) => v.labels.operation === operation).map((v) => [v.labels.outcome, v.value]));
  };
  const timed = async (operation: string) => {
    const metric = await metrics.registry.getSingleMetric('stripe_request_duration_seconds')!.get();
    const values = metric.values as { metricName?: string; labels: Record<string, unknown>; value: number }[];
    return values.find((v) => v.metricName === 'stripe_request_duration_seconds_count' && v.labels.operation === operation)?.value;
  };

  it('a decline and a transient failure move the counter, each under its outcome, and every call is timed', async () => {
    expect((await gateway.charge(request('tok_chargeDeclined'))).outcome).toBe('declined');
    expect(await counted('payment_intents.create')).toEqual({ declined: 1 });
    fake.inject('unavailable', /^\/v1\/payment_intents$/);
    const down = request();
    await expect(gateway.charge(down)).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
    expect(await counted('payment_intents.create')).toEqual({ declined: 1, transient: 1 });
    expect((await gateway.charge(down)).outcome).toBe('succeeded');
    expect(await counted('payment_intents.create')).toEqual({ declined: 1, transient: 1, ok: 1 });
    expect(await timed('payment_intents.create')).toBe(3);
    // The text /metrics serves carries the series too.
    expect(await metrics.registry.metrics()).toMatch(
      /^stripe_requests_total\{operation="payment_intents.create",outcome="transient",kind="charge"\} 1$/m,
    );
  });

  it("idempotency_error from our own key derivation is counted as such; reconciliation's probe of a used key is key_reconciled", async () => {
    const first = request('tok_visa', 2500);
    expect((await gateway.charge(first)).outcome).toBe('succeeded');
    // Reconciliation within the key window: its tombstone probe meets the charge (Stripe's idempotency_error, expected).
    expect((await gateway.chargeOrCancel(first.chargeKey)).outcome).toBe('charged');
    expect(await counted('payment_intents.create')).toEqual({ ok: 2, key_reconciled: 1 });
    // The same key for another amount (what a wrong derivation sends): loud, and counted for the alert.
    await journal.deleteOne({ _id: first.chargeKey });
    await expect(gateway.charge({ ...first, amountMinor: 9900 })).rejects.toBeInstanceOf(StripeIdempotencyKeyMisuseError);
    expect((await counted('payment_intents.create')).idempotency_error).toBe(1);
  });

  /** stripe_requests_total{outcome="idempotency_error"} by kind: what the StripeIdempotencyKeyMisuse alert names. */
  const misusedKinds = async () => {
    const metric = await metrics.registry.getSingleMetric('stripe_requests_total')!.get();
    return Object.fromEntries(metric.values.filter((v) => v.labels.outcome === 'idempotency_error').map((v) => [v.labels.kind, v.value]));
  };

  it('a key misuse on a void is counted and named as the void, with its own key - never as the charge (issue 48 item 4)', async () => {
    const charge = request();
    expect((await gateway.authorize(charge)).outcome).toBe('authorized');
    const key = `void:${charge.chargeKey}`;
    // The key was first sent as a capture (a derivation giving one key to two operations), then as the void.
    expect((await gateway.capture({ captureKey: key, chargeKey: charge.chargeKey, amountMinor: 1000 })).outcome).toBe('succeeded');
    await journal.deleteOne({ _id: key });
    const misuse = await gateway.void({ voidKey: key, chargeKey: charge.chargeKey }).catch((error: unknown) => error);
    expect(misuse).toBeInstanceOf(StripeIdempotencyKeyMisuseError);
    expect(misuse).toMatchObject({ key, kind: 'void' });
    expect(await misusedKinds()).toEqual({ void: 1 });
  });

  it("a key misuse on the processing bound's cancel names the cancel's key and kind, not the charge key (issue 48 item 4)", async () => {
    const charge = request('tok_async');
    expect((await gateway.charge(charge)).outcome).toBe('processing');
    const cancelKey = `${charge.chargeKey}:expire:processing`;
    // Something else was sent under the cancel's key first.
    const stripe = createStripeClient({
      secretKey: 'sk_test_fake0123456789',
      maxNetworkRetries: 0,
      timeoutMs: 5000,
      apiBase: fake.apiBase,
    });
    await stripe.paymentIntents.create(
      { amount: 100, currency: 'usd', allowed_payment_method_types: ['card'] },
      { idempotencyKey: cancelKey },
    );
    const misuse = await gateway.processingOrCancel(charge.chargeKey).catch((error: unknown) => error);
    expect(misuse).toBeInstanceOf(StripeIdempotencyKeyMisuseError);
    expect(misuse).toMatchObject({ key: cancelKey, kind: 'cancel' });
    expect(await misusedKinds()).toEqual({ cancel: 1 });
  });
});
