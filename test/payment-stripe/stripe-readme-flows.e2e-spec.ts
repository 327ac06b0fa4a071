import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const WEBHOOK_SECRET = 'whsec_flows0123456789abcdef';

interface OrderDoc {
  _id: string;
  state: string;
  authorizedMinor: number;
  capturedMinor: number;
  refundedMinor: number;
}

/**
 * The README's flows with PAYMENT_PROVIDER=stripe, the service booted
 * in-process on the Stripe adapter talking HTTP to the fake: charge,
 * authorize then capture, void, refund, cancel by key and a signed Stripe
 * webhook - each judged by what the store holds (the order, its payment,
 * refund and journal lines, the adapter's request journal) and by what
 * Stripe holds (the fake's PaymentIntents and Refunds).
 */
describe('PAYMENT_PROVIDER=stripe: charge, capture, void, refund, cancel by key and a webhook, by the store', () => {
  let t: TestApp;
  const fake = new StripeFake();

  beforeAll(async () => {
    await fake.start();
    t = await startApp({
      dbName: 'test_stripe_readme_flows',
      env: {
        ...fake.serviceEnv(WEBHOOK_SECRET),
        STRIPE_MAX_NETWORK_RETRIES: '0',
      },
    });
    await t.db.collection('stripe_requests').deleteMany({});
    await t.db.collection('webhook_inbox').deleteMany({});
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await t?.close();
    await fake.stop();
  });

  const post = (path: string, key: string | null, body: object = {}) => {
    const req = t.http().post(path).set(auth());
    return (key ? req.set('Idempotency-Key', key) : req).send(body);
  };
  const order = (id: string) => t.db.collection<OrderDoc>('orders').findOne({ _id: id });
  const payment = (id: string) => t.db.collection<{ status: string; amountMinor: number }>('payments').findOne({ orderId: id });
  const journalOf = (key: string) =>
    t.db.collection<{ _id: string; call: { kind: string }; objectId: string | null }>('stripe_requests').findOne({ _id: key });
  /** The order's journal balances: debits = credits. */
  const balance = async (id: string) =>
    (await t.db.collection<{ direction: string; amountMinor: number }>('ledger_entries').find({ orderId: id }).toArray()).reduce(
      (sum, line) => sum + (line.direction === 'debit' ? line.amountMinor : -line.amountMinor),
      0,
    );
  const intentOf = (id: string) =>
    [...fake.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).charge_key === `charge:${id}`);

  it('create: one PaymentIntent charged, the order saved, its payment and balanced journal stored, the key journaled with its intent id', async () => {
    const res = await post('/v1/orders', 'flows-charge', orderBody()).expect(201);
    const id = res.body.id as string;
    expect(await order(id)).toMatchObject({ state: 'saved', capturedMinor: 2500, refundedMinor: 0 });
    expect(await payment(id)).toMatchObject({ amountMinor: 2500 });
    expect(await balance(id)).toBe(0);
    const [intent] = intentOf(id);
    expect(intentOf(id)).toHaveLength(1);
    expect(intent).toMatchObject({ status: 'succeeded', amount: 2500, amount_received: 2500, capture_method: 'automatic' });
    expect(await journalOf(`charge:${id}`)).toMatchObject({ call: { kind: 'charge' }, objectId: intent.id });
  });

  it('authorize then capture part: requires_capture, then succeeded for the captured amount; the order captured', async () => {
    const res = await post('/v1/orders', 'flows-authorize', orderBody({ capture: 'manual' })).expect(201);
    const id = res.body.id as string;
    expect(await order(id)).toMatchObject({ state: 'authorized', authorizedMinor: 2500, capturedMinor: 0 });
    expect(intentOf(id)[0].status).toBe('requires_capture');
    await post(`/v1/orders/${id}/capture`, 'flows-capture', { amountMinor: 2000 }).expect(200);
    expect(await order(id)).toMatchObject({ state: 'captured', capturedMinor: 2000 });
    expect(await payment(id)).toMatchObject({ status: 'captured' });
    expect(await balance(id)).toBe(0);
    expect(intentOf(id)[0]).toMatchObject({ status: 'succeeded', amount_received: 2000 });
    expect(await journalOf('flows-capture')).toBeNull();
    // The capture's own key at Stripe is derived, not the client's: one capture journal entry for the order's intent.
    const captures = await t.db.collection('stripe_requests').countDocuments({ chargeKey: `charge:${id}`, 'call.kind': 'capture' });
    expect(captures).toBe(1);
  });

  it('void: the authorization canceled at Stripe, the order voided, no money journaled', async () => {
    const res = await post('/v1/orders', 'flows-void-order', orderBody({ capture: 'manual' })).expect(201);
    const id = res.body.id as string;
    await post(`/v1/orders/${id}/void`, 'flows-void', {}).expect(200);
    expect(await order(id)).toMatchObject({ state: 'voided', capturedMinor: 0 });
    expect(await payment(id)).toMatchObject({ status: 'voided' });
    expect(await t.db.collection('ledger_entries').countDocuments({ orderId: id })).toBe(0);
    expect(intentOf(id)[0]).toMatchObject({ status: 'canceled', cancellation_reason: 'requested_by_customer' });
    // Again under the same key: the stored answer, nothing more at Stripe.
    const again = await post(`/v1/orders/${id}/void`, 'flows-void', {}).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('refund part: one Stripe refund under its key, the refund stored succeeded, the order partially refunded, the books balanced', async () => {
    const res = await post('/v1/orders', 'flows-refund-order', orderBody()).expect(201);
    const id = res.body.id as string;
    const refund = await post(`/v1/orders/${id}/refunds`, 'flows-refund', { amountMinor: 1000, reason: 'requested_by_customer' }).expect(
      201,
    );
    expect(await t.db.collection('refunds').findOne({ _id: refund.body.id })).toMatchObject({ state: 'succeeded', amountMinor: 1000 });
    expect(await order(id)).toMatchObject({ state: 'partially_refunded', refundedMinor: 1000 });
    expect(await balance(id)).toBe(0);
    const [intent] = intentOf(id);
    const refunds = [...fake.refunds.values()].filter((r) => r.payment_intent === intent.id);
    expect(refunds.map((r) => [r.status, r.amount])).toEqual([['succeeded', 1000]]);
  });

  it('cancel by key: the charge under the create key refunded in full at Stripe, the order refunded, the key refused from then on', async () => {
    const res = await post('/v1/orders', 'flows-cancel', orderBody()).expect(201);
    const id = res.body.id as string;
    const canceled = await post('/v1/idempotency-keys/flows-cancel/cancel', null).expect(200);
    expect(canceled.body).toMatchObject({ status: 'canceled', outcome: 'refunded', orderId: id });
    expect(await order(id)).toMatchObject({ state: 'refunded', refundedMinor: 2500 });
    expect(await balance(id)).toBe(0);
    const [intent] = intentOf(id);
    expect([...fake.refunds.values()].filter((r) => r.payment_intent === intent.id).map((r) => r.amount)).toEqual([2500]);
    const retried = await post('/v1/orders', 'flows-cancel', orderBody()).expect(409);
    expect(retried.body.code).toBe('idempotency_key_canceled');
    expect(intentOf(id)).toHaveLength(1);
  });

  it('a signed Stripe webhook settles an asynchronous payment: the event in the inbox once, the order saved with its journal', async () => {
    const res = await post('/v1/orders', 'flows-async', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202);
    const id = res.body.id as string;
    expect(await order(id)).toMatchObject({ state: 'processing' });
    const [intent] = intentOf(id);
    fake.settle(intent.id as string, 'succeeded');
    const event = fake.events.find((e) => e.type === 'payment_intent.succeeded' && e.object.id === intent.id)!;
    const { payload, header } = fake.signed(event, WEBHOOK_SECRET);
    const deliver = () =>
      t.http().post('/v1/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', header).send(payload);
    expect((await deliver().expect(200)).body).toMatchObject({ duplicate: false, outcome: 'applied', orderId: id });
    expect((await deliver().expect(200)).body).toMatchObject({ duplicate: true });
    expect(await t.db.collection('webhook_inbox').countDocuments({ _id: event.id as never })).toBe(1);
    expect(await order(id)).toMatchObject({ state: 'saved', capturedMinor: 2500 });
    expect(await balance(id)).toBe(0);
    expect(await t.db.collection('ledger_entries').countDocuments({ orderId: id })).toBeGreaterThan(0);
  });
});
