import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import { exportBooks } from '../support/stripe-fake/provider-books.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import type { OpenAPIV3 } from 'openapi-types';
import { findViolations } from '../support/invariants.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const WEBHOOK_SECRET = 'whsec_fake0123456789abcdef';

/**
 * PAYMENT_PROVIDER=stripe runs the README's flows against the local Stripe
 * fake (real HTTP through the SDK): create, decline, outage, asynchronous
 * payment settled by a signed webhook, manual capture, refund, settlement -
 * and the money invariants hold on Stripe's books as on the simulator's.
 */
describe('PAYMENT_PROVIDER=stripe: the README flows against the Stripe fake', () => {
  let t: TestApp;
  const fake = new StripeFake();
  const acknowledged: string[] = [];
  let check: ResponseCheck;

  beforeAll(async () => {
    await fake.start();
    fake.webhookSecret = WEBHOOK_SECRET;
    t = await startApp({
      dbName: 'test_stripe_provider',
      env: {
        ...fake.serviceEnv(WEBHOOK_SECRET),
        STRIPE_MAX_NETWORK_RETRIES: '0',
      },
    });
    await t.db.collection('stripe_requests').deleteMany({});
    await t.db.collection('webhook_inbox').deleteMany({});
    check = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await t?.close();
    await fake.stop();
  });

  const create = (key: string, overrides: Record<string, unknown> = {}) =>
    t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody(overrides));
  const intentsOf = (orderId: string) =>
    [...fake.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).charge_key === `charge:${orderId}`);
  const deliver = (event: { id: string; type: string; created: number; object: Record<string, unknown> }, secret = WEBHOOK_SECRET) => {
    const { payload, header } = fake.signed(event, secret);
    return t.http().post('/v1/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', header).send(payload);
  };

  it('creates a paid order once: one PaymentIntent, and the same key replays the answer', async () => {
    const first = await create('stripe-create-1').expect(201);
    expect(first.body.state).toBe('saved');
    acknowledged.push(first.body.id);
    const again = await create('stripe-create-1').expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const intents = intentsOf(first.body.id);
    expect(intents.map((pi) => [pi.status, pi.amount, pi.currency])).toEqual([['succeeded', 2500, 'usd']]);
    const payment = await t.db.collection('payments').findOne({ orderId: first.body.id });
    expect(payment).toMatchObject({ amountMinor: 2500 });
  });

  it('a declined card answers 402 card_declined, stored and replayed, with no money taken', async () => {
    const declined = await create('stripe-decline-1', { paymentMethod: { token: 'tok_chargeDeclined' } }).expect(402);
    expect(declined.body.code).toBe('card_declined');
    const again = await create('stripe-decline-1', { paymentMethod: { token: 'tok_chargeDeclined' } }).expect(402);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('Stripe unavailable answers 503 + Retry-After, nothing stored; the retry charges once', async () => {
    fake.inject('unavailable', /^\/v1\/payment_intents$/);
    const down = await create('stripe-outage-1').expect(503);
    expect(down.body.code).toBe('payment_provider_unavailable');
    expect(down.headers['retry-after']).toBe('2');
    const retried = await create('stripe-outage-1').expect(201);
    acknowledged.push(retried.body.id);
    expect(intentsOf(retried.body.id)).toHaveLength(1);
  });

  it("Stripe's faults through the API: a 5xx after the money moved and lost answers still end in one order and one PaymentIntent", async () => {
    // 5xx stored under the key after the charge: the adapter finds the PaymentIntent by metadata (searchable at once here).
    fake.inject('server_error_after', /^\/v1\/payment_intents$/);
    const found = await create('stripe-5xx-1').expect(201);
    acknowledged.push(found.body.id);
    expect(intentsOf(found.body.id).map((pi) => pi.status)).toEqual(['succeeded']);
    // Answers lost twice (the SDK's closed-connection retry included): 503, and the client's retry resumes the same order.
    fake.inject('lose_answer', /^\/v1\/payment_intents$/);
    fake.inject('lose_answer', /^\/v1\/payment_intents$/);
    const lost = await create('stripe-lost-1').expect(503);
    expect(lost.headers['retry-after']).toBe('2');
    const resumed = await create('stripe-lost-1').expect(201);
    acknowledged.push(resumed.body.id);
    expect(intentsOf(resumed.body.id)).toHaveLength(1);
    expect(await t.db.collection('orders').countDocuments({ 'idempotency.recordId': { $regex: 'stripe-lost-1' } })).toBe(1);
  });

  it('an asynchronous payment settles by a signed Stripe webhook, once, whatever the deliveries', async () => {
    const pending = await create('stripe-async-1', { paymentMethod: { token: 'tok_async' } }).expect(202);
    expect(pending.body.state).toBe('processing');
    const [intent] = intentsOf(pending.body.id);
    const processing = fake.events.find((e) => e.type === 'payment_intent.processing' && e.object.id === intent.id)!;
    fake.settle(intent.id as string, 'succeeded');
    const succeeded = fake.events.find((e) => e.type === 'payment_intent.succeeded' && e.object.id === intent.id)!;

    // A forged signature, and a genuine signature over other bytes: 401, nothing recorded.
    await deliver(succeeded, 'whsec_not_the_endpoint_secret').expect(401);
    const { payload, header } = fake.signed(succeeded);
    await t
      .http()
      .post('/v1/webhooks/stripe')
      .set('content-type', 'application/json')
      .set('stripe-signature', header)
      .send(payload.replace('"livemode":false', '"livemode":false '))
      .expect(401);
    expect(await t.db.collection('webhook_inbox').countDocuments({ _id: succeeded.id as never })).toBe(0);

    const applied = await deliver(succeeded);
    expect(applied.status).toBe(200);
    // The door's answers are the ones its OpenAPI document promises.
    const documented = (res: { status: number; headers: Record<string, string>; body: unknown }) =>
      check.errors('POST', '/v1/webhooks/stripe', res.status, String(res.headers['content-type']).split(';')[0], res.body);
    expect(documented(applied)).toEqual([]);
    expect(documented(await deliver(succeeded, 'whsec_not_the_endpoint_secret'))).toEqual([]);
    expect(applied.body).toMatchObject({ eventId: succeeded.id, duplicate: false, outcome: 'applied', orderId: pending.body.id });
    expect((await deliver(succeeded).expect(200)).body).toMatchObject({ duplicate: true });
    // The earlier event, delivered late: recorded, changes nothing.
    expect((await deliver(processing).expect(200)).body.outcome).toBe('ignored');
    // A type the service does not act on: acknowledged.
    const created = fake.events.find((e) => e.type === 'payment_intent.created' && e.object.id === intent.id)!;
    expect((await deliver(created).expect(200)).body.outcome).toBe('unknown_type');

    const order = await t.http().get(`/v1/orders/${pending.body.id}`).set(auth()).expect(200);
    expect(order.body.state).toBe('saved');
    acknowledged.push(pending.body.id);
  });

  it('manual capture: authorize, then capture part under its own key', async () => {
    const authorized = await create('stripe-manual-1', { capture: 'manual' }).expect(201);
    expect(authorized.body.state).toBe('authorized');
    acknowledged.push(authorized.body.id);
    const [intent] = intentsOf(authorized.body.id);
    expect(intent.status).toBe('requires_capture');
    const captured = await t
      .http()
      .post(`/v1/orders/${authorized.body.id}/capture`)
      .set(auth())
      .set('Idempotency-Key', 'stripe-capture-1')
      .send({ amountMinor: 2000 });
    expect(captured.status).toBeLessThan(300);
    expect(intent.status).toBe('succeeded');
    expect(intent.amount_received).toBe(2000);
  });

  it('refunds part of a paid order once under its key', async () => {
    const paid = await create('stripe-refund-order').expect(201);
    acknowledged.push(paid.body.id);
    const refund = () =>
      t
        .http()
        .post(`/v1/orders/${paid.body.id}/refunds`)
        .set(auth())
        .set('Idempotency-Key', 'stripe-refund-1')
        .send({ amountMinor: 1000, reason: 'requested_by_customer' });
    const first = await refund();
    expect(first.status).toBe(201);
    expect((await refund()).headers['idempotent-replayed']).toBe('true');
    const [intent] = intentsOf(paid.body.id);
    expect([...fake.refunds.values()].filter((r) => r.payment_intent === intent.id).map((r) => r.amount)).toEqual([1000]);
  });

  it("settlement from Stripe's balance transactions matches the ledger, and the money invariants hold on Stripe's books", async () => {
    const report = await t.app.get(SettlementReconciliation).run(new Date(Date.now() - 60 * 60 * 1000), new Date(Date.now() + 60_000));
    expect(report.mismatches).toEqual([]);
    expect(report.matched).toBeGreaterThanOrEqual(4);
    const books = t.db.client.db('test_stripe_provider_books');
    await exportBooks(fake, books);
    expect(await findViolations({ db: t.db, simulatorDb: books, acknowledgedOrderIds: acknowledged })).toEqual([]);
  });
});
