import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import type Stripe from 'stripe';
import { Clock } from '../../src/common/clock.js';
import { PaymentProviderUnavailableError, type ChargeRequest } from '../../src/payments/payment-gateway.port.js';
import { createStripeClient } from '../../src/payment-stripe/stripe-client.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { StripeRequestJournal, type JournalEntry } from '../../src/payment-stripe/stripe-request.journal.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/**
 * Two seams between the Stripe adapter and the money operations (review of
 * issue 35): a card that needs 3-D Secure (this API has no step where the
 * customer could authenticate), and a 5xx Stripe stored under a refund's,
 * capture's or void's key (replayed for 24 h).
 */
describe('Stripe adapter: 3-D Secure cards and stored 5xx on operations', () => {
  let t: TestApp;
  const fake = new StripeFake();
  let journal: Collection<JournalEntry>;
  let stripe: Stripe;
  let gateway: StripePaymentGateway;

  beforeAll(async () => {
    await fake.start();
    t = await startApp({
      dbName: 'test_stripe_3ds_stored_5xx',
      env: {
        ...fake.serviceEnv(),
        STRIPE_MAX_NETWORK_RETRIES: '0',
      },
    });
    journal = t.db.collection<JournalEntry>('stripe_requests');
    stripe = createStripeClient({ secretKey: 'sk_test_fake0123456789', maxNetworkRetries: 0, timeoutMs: 5000, apiBase: fake.apiBase });
    gateway = new StripePaymentGateway(stripe, new StripeRequestJournal(journal), t.app.get(Clock), { retryAfterSeconds: 2 });
  });
  beforeEach(async () => {
    fake.reset();
    await t.reset();
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await t?.close();
    await fake.stop();
  });

  const THREE_DS = 'tok_threeDSecure2Required';
  const newKey = () => `charge:ord_${randomBytes(12).toString('hex')}`;
  const opKey = (kind: string) => `${kind}:${randomBytes(12).toString('hex')}`;
  const request = (chargeKey: string, paymentToken = 'tok_visa'): ChargeRequest => ({
    chargeKey,
    amountMinor: 2500,
    currency: 'USD',
    paymentToken,
    reference: chargeKey.slice('charge:'.length),
  });
  const intentsOf = (chargeKey: string) =>
    [...fake.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).charge_key === chargeKey);
  /** PaymentIntents that took or hold money. */
  const moneyUnder = (chargeKey: string) =>
    intentsOf(chargeKey).filter((pi) => ['succeeded', 'requires_capture'].includes(pi.status as string));
  /** A manual-capture PaymentIntent under the charge key's metadata, sent straight to Stripe (not journaled by the adapter). */
  const manualIntentOutsideUs = (key: string, paymentMethod: string) =>
    stripe.paymentIntents.create(
      {
        amount: 2500,
        currency: 'usd',
        capture_method: 'manual',
        confirm: true,
        payment_method: paymentMethod,
        allowed_payment_method_types: ['card'],
        metadata: { charge_key: key },
      },
      { idempotencyKey: `outside-${key}` },
    );
  const create = (key: string, overrides: Record<string, unknown>) =>
    t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody(overrides));
  const order = (orderId: string) => t.db.collection('orders').findOne({ _id: orderId as never });

  describe('a card that needs 3-D Secure', () => {
    it.each(['manual', 'automatic'])(
      '%s capture: declined (402 card_declined, stored and replayed), never a 500, nothing charged',
      async (capture) => {
        const key = `3ds-${capture}-1`;
        const declined = await create(key, { capture, paymentMethod: { token: THREE_DS } });
        expect(declined.status).toBe(402);
        expect(declined.body.code).toBe('card_declined');
        const orderId = declined.body.orderId as string;
        expect(await order(orderId)).toMatchObject({
          state: 'failed',
          failureReason: 'card_declined',
          authorizedMinor: 0,
          capturedMinor: 0,
        });
        const again = await create(key, { capture, paymentMethod: { token: THREE_DS } }).expect(402);
        expect(again.headers['idempotent-replayed']).toBe('true');
        const chargeKey = `charge:${orderId}`;
        expect(moneyUnder(chargeKey)).toHaveLength(0);
        expect(intentsOf(chargeKey).map((pi) => [pi.status, (pi.last_payment_error as { code?: string } | null)?.code])).toEqual([
          ['requires_payment_method', 'authentication_required'],
        ]);
        expect(await t.db.collection('ledger_entries').countDocuments({ orderId })).toBe(0);
        expect(await t.db.collection('payments').countDocuments({ orderId })).toBe(0);
      },
    );

    it('the reaper path: a manual create whose answers were lost is settled by the reaper as declined, never left processing', async () => {
      fake.inject('lose_answer', /^\/v1\/payment_intents$/);
      fake.inject('lose_answer', /^\/v1\/payment_intents$/);
      const lost = await create('3ds-reaper-1', { capture: 'manual', paymentMethod: { token: THREE_DS } }).expect(503);
      expect(lost.body.code).toBe('payment_provider_unavailable');
      const [pending] = await t.db.collection<{ _id: string; state: string }>('orders').find({}).toArray();
      expect(pending.state).toBe('pending');
      // As if the worker had died: the reaper takes the record over and asks Stripe what the key holds.
      await t.db
        .collection('idempotency_records')
        .updateMany(
          { status: 'pending' },
          { $set: { 'lease.resumableUntil': new Date(Date.now() - 1), 'lease.expiresAt': new Date(Date.now() - 1) } },
        );
      expect(await t.app.get(IdempotencyReaper).runOnce()).toMatchObject({ examined: 1 });
      expect(await order(pending._id)).toMatchObject({
        state: 'failed',
        failureReason: 'card_declined',
        authorizedMinor: 0,
      });
      expect(moneyUnder(`charge:${pending._id}`)).toHaveLength(0);
    });

    it('an authorization under a key whose order waits in processing is released, not reported still processing forever', async () => {
      const key = newKey();
      expect((await gateway.authorize(request(key))).outcome).toBe('authorized');
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'canceled' });
      expect(intentsOf(key).map((pi) => [pi.status, pi.cancellation_reason])).toEqual([['canceled', 'abandoned']]);
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'canceled' });
    });

    it('a charge journaled and sent by the release before error_on_requires_action is replayed as it was sent, not refused as key misuse', async () => {
      const key = newKey();
      const before = {
        amount: 2500,
        currency: 'usd',
        capture_method: 'automatic',
        confirm: true,
        payment_method: 'pm_card_visa',
        allowed_payment_method_types: ['card'],
        metadata: { charge_key: key, reference: key.slice('charge:'.length) },
      };
      // The earlier release journaled and sent its request; its answer was lost, and the client retries after the deploy.
      await journal.insertOne({
        _id: key,
        call: { kind: 'charge', params: before },
        chargeKey: key,
        firstSentAt: new Date(),
        objectId: null,
      });
      await stripe.paymentIntents.create(before as Stripe.PaymentIntentCreateParams, { idempotencyKey: key });
      const retried = await gateway.charge(request(key));
      expect(retried).toMatchObject({ outcome: 'succeeded', charge: { chargeKey: key, amountMinor: 2500 } });
      expect(moneyUnder(key)).toHaveLength(1);
      expect(fake.requests.filter((r) => r.key === key).map((r) => r.status)).toEqual([200, 200]);
    });

    /** A charge the release before error_on_requires_action journaled and sent with this card; its answer was lost. */
    const journaledBeforeTheDeploy = async (key: string, paymentMethod: string) => {
      const before = {
        amount: 2500,
        currency: 'usd',
        capture_method: 'automatic',
        confirm: true,
        payment_method: paymentMethod,
        allowed_payment_method_types: ['card'],
        metadata: { charge_key: key, reference: key.slice('charge:'.length) },
      };
      await journal.insertOne({
        _id: key,
        call: { kind: 'charge', params: before },
        chargeKey: key,
        firstSentAt: new Date(),
        objectId: null,
      });
      await stripe.paymentIntents.create(before as Stripe.PaymentIntentCreateParams, { idempotencyKey: key });
    };

    it('a PaymentIntent waiting in requires_action is not paid: the replay of an earlier release charge on a 3-D Secure card answers processing, never charged', async () => {
      const key = newKey();
      await journaledBeforeTheDeploy(key, 'pm_card_threeDSecure2Required');
      expect(intentsOf(key).map((pi) => pi.status)).toEqual(['requires_action']);
      // The client retries after the deploy: Stripe replays the first answer, the intent waiting on the customer.
      expect(await gateway.charge(request(key, THREE_DS))).toEqual({ outcome: 'processing' });
      // So does the reaper's look, and the processing bound then cancels it: no money, no order saved unpaid.
      expect(await gateway.chargeOrCancel(key)).toEqual({ outcome: 'processing' });
      expect(moneyUnder(key)).toHaveLength(0);
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'canceled' });
    });

    it('a PaymentIntent still processing is not paid: the replay of an earlier release charge answers processing, and succeeded only once Stripe settles it', async () => {
      const key = newKey();
      await journaledBeforeTheDeploy(key, 'pm_card_async');
      expect(await gateway.charge(request(key, 'tok_async'))).toEqual({ outcome: 'processing' });
      expect(await gateway.chargeOrCancel(key)).toEqual({ outcome: 'processing' });
      expect(moneyUnder(key)).toHaveLength(0);
      const [intent] = intentsOf(key);
      fake.settle(intent.id as string, 'succeeded');
      // The replay under the key keeps answering its first body; the processing sweep reads the intent as it is now.
      expect(await gateway.processingOrCancel(key)).toMatchObject({ outcome: 'succeeded', charge: { id: intent.id, amountMinor: 2500 } });
    });

    it('a PaymentIntent left in requires_action (sent without error_on_requires_action) is canceled by the processing bound', async () => {
      const key = newKey();
      await manualIntentOutsideUs(key, 'pm_card_threeDSecure2Required');
      expect(intentsOf(key).map((pi) => pi.status)).toEqual(['requires_action']);
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'canceled' });
      expect(intentsOf(key).map((pi) => pi.status)).toEqual(['canceled']);
    });

    it('a cancel Stripe refused while the payment was processing does not answer for it later: the authorization it became is released', async () => {
      const key = newKey();
      await manualIntentOutsideUs(key, 'pm_card_async');
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'still_processing', method: 'card' });
      // Stripe keeps that 400 (and the intent as it was) under the cancel's key for 24 h.
      const refused = fake.requests.filter((r) => r.path.endsWith('/cancel')).map((r) => r.status);
      expect(refused).toEqual([400]);
      // As Stripe moves a manual-capture payment on once it has processed: an authorization nobody will capture.
      const [intent] = intentsOf(key);
      Object.assign(intent, { status: 'requires_capture', amount_capturable: 2500 });
      expect(await gateway.processingOrCancel(key)).toEqual({ outcome: 'canceled' });
      expect(intentsOf(key).map((pi) => [pi.status, pi.cancellation_reason])).toEqual([['canceled', 'abandoned']]);
    });
  });

  describe('a 5xx Stripe stored under an operation key', () => {
    it('refund: the money moved before the stored 500 - the request and the reaper find the refund on the payment, not 23 h of 503', async () => {
      const key = newKey();
      await gateway.charge(request(key));
      const refundKey = opKey('refund');
      fake.inject('server_error_after', /^\/v1\/refunds$/);
      const refund = { refundKey, chargeKey: key, amountMinor: 1000, currency: 'USD' };
      const first = await gateway.refund(refund);
      expect(first).toMatchObject({ outcome: 'succeeded', operation: { kind: 'refund', key: refundKey, amountMinor: 1000 } });
      // Stripe replays the stored 500 under the key from now on: both paths still answer the refund.
      expect(await gateway.refund(refund)).toEqual(first);
      expect(await gateway.operationOrCancel(refundKey)).toEqual(first);
      expect([...fake.refunds.values()].map((r) => r.amount)).toEqual([1000]);
      expect(fake.requests.filter((r) => r.key === refundKey && r.path === '/v1/refunds').map((r) => r.status)).toEqual([500, 500, 500]);
    });

    it('refund: a stored 500 with nothing refunded - the request keeps 503, the reaper cancels the key instead of waiting out the window', async () => {
      const key = newKey();
      await gateway.charge(request(key));
      const refundKey = opKey('refund');
      // Past what was captured: Stripe refunds nothing, and the fault stores a 500 under the key instead of its 400.
      fake.inject('server_error_after', /^\/v1\/refunds$/);
      const refund = { refundKey, chargeKey: key, amountMinor: 3000, currency: 'USD' };
      await expect(gateway.refund(refund)).rejects.toBeInstanceOf(PaymentProviderUnavailableError);
      expect(await gateway.operationOrCancel(refundKey)).toEqual({ outcome: 'canceled' });
      expect(await journal.findOne({ _id: refundKey })).toMatchObject({ call: { kind: 'canceled' } });
      expect(await gateway.refund(refund)).toEqual({ outcome: 'canceled' });
      expect(fake.refunds.size).toBe(0);
    });

    it('capture and void: the stored 500 after the money moved is answered from the PaymentIntent', async () => {
      const captureKey = opKey('capture');
      const authorized = newKey();
      await gateway.authorize(request(authorized));
      fake.inject('server_error_after', /\/capture$/);
      const captured = await gateway.capture({ captureKey, chargeKey: authorized, amountMinor: 2000 });
      expect(captured).toMatchObject({ outcome: 'succeeded', operation: { kind: 'capture', key: captureKey, amountMinor: 2000 } });
      expect(await gateway.operationOrCancel(captureKey)).toEqual(captured);

      const voidKey = opKey('void');
      const toVoid = newKey();
      await gateway.authorize(request(toVoid));
      fake.inject('server_error_after', /\/cancel$/);
      const voided = await gateway.void({ voidKey, chargeKey: toVoid });
      expect(voided).toMatchObject({ outcome: 'succeeded', operation: { kind: 'void', key: voidKey, amountMinor: 2500 } });
      expect(await gateway.operationOrCancel(voidKey)).toEqual(voided);
      expect(intentsOf(toVoid).map((pi) => pi.status)).toEqual(['canceled']);
    });
  });
});
