import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway, heldLeases, ThrowingFaultInjector, withCrashStandIn } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

describe('POST /v1/orders and the order resources', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  let faults: ThrowingFaultInjector;
  let keySeq = 0;
  const nextKey = () => `order-test-${++keySeq}`;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_orders',
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
    faults = withCrashStandIn(t.app, gateway);
  });
  beforeEach(async () => {
    await t.reset();
    // Counts start from zero in every test: an accumulated count made `calls >= 2` pass whatever this test did.
    gateway.reset();
    faults.reset();
  });
  afterAll(async () => t.close());

  const create = (key: string, body: object = orderBody(), tenant: 'acme' | 'globex' = 'acme') =>
    t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', key).send(body);

  it('creates, charges and saves an order: one order, one payment, one charge, a balanced journal, one event', async () => {
    const res = await create(nextKey()).expect(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.location).toBe(`/v1/orders/${res.body.id}`);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(res.body).toMatchObject({ state: 'saved', customerId: 'cus_123', currency: 'USD', amountMinor: 2500 });
    expect(res.body.paymentId).toMatch(/^pay_/);

    const order = await t.db.collection('orders').findOne({ _id: res.body.id });
    expect(order).toMatchObject({ state: 'saved', tenant: 'acme', paymentToken: null });
    expect(Object.keys(order!.stateHistory).sort()).toEqual(['charged', 'pending', 'saved']);
    expect(await t.db.collection('payments').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    const entries = await t.db.collection('ledger_entries').find({ orderId: res.body.id }).toArray();
    expect(entries).toHaveLength(4);
    expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.completed' })).toBe(1);
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(record).toMatchObject({ status: 'complete', recoveryPoint: 'saved', lease: null });
    expect(await findViolations({ ...t, acknowledgedOrderIds: [res.body.id], requireSettled: true })).toEqual([]);
  });

  it('serves the order, its ledger and the tenant list; other tenants get 404', async () => {
    const created = (await create(nextKey()).expect(201)).body;
    const got = await t.http().get(`/v1/orders/${created.id}`).set(auth()).expect(200);
    expect(got.body).toEqual(created);

    const ledger = await t.http().get(`/v1/orders/${created.id}/ledger`).set(auth()).expect(200);
    expect(ledger.body.entries).toHaveLength(4);
    const balance = ledger.body.entries.reduce(
      (sum: number, e: { direction: string; amountMinor: number }) => sum + (e.direction === 'debit' ? e.amountMinor : -e.amountMinor),
      0,
    );
    expect(balance).toBe(0);
    expect(ledger.body.entries[0]).toEqual({
      journalId: `jrn_${created.id}`,
      account: 'customer_receivable',
      direction: 'debit',
      amountMinor: 2500,
      currency: 'USD',
    });

    const other = await t.http().get(`/v1/orders/${created.id}`).set(auth('globex')).expect(404);
    expect(other.body.code).toBe('order_not_found');
    await t.http().get(`/v1/orders/${created.id}/ledger`).set(auth('globex')).expect(404);
    const list = await t.http().get('/v1/orders').set(auth('globex')).expect(200);
    expect(list.body.data).toEqual([]);
  });

  it('pages the list newest first with an opaque cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(nextKey()).expect(201)).body.id);
    const first = await t.http().get('/v1/orders?limit=2').set(auth()).expect(200);
    const second = await t.http().get(`/v1/orders?limit=2&cursor=${first.body.nextCursor}`).set(auth()).expect(200);
    const third = await t.http().get(`/v1/orders?limit=2&cursor=${second.body.nextCursor}`).set(auth()).expect(200);
    const seen = [...first.body.data, ...second.body.data, ...third.body.data].map((o: { id: string }) => o.id);
    // Newest first: the exact reverse of the creation order, not just the same set.
    expect(seen).toEqual([...ids].reverse());
    expect(third.body.nextCursor).toBeNull();
    const bad = await t.http().get('/v1/orders?cursor=not-a-cursor').set(auth()).expect(400);
    expect(bad.body.code).toBe('invalid_cursor');
    await t.http().get('/v1/orders?limit=1000').set(auth()).expect(400);
  });

  it('answers malformed or unknown ids with 404, not 500', async () => {
    for (const id of ['nope', 'ord_zz', '{"$gt":""}', 'ord_' + 'a'.repeat(24)]) {
      const res = await t
        .http()
        .get(`/v1/orders/${encodeURIComponent(id)}`)
        .set(auth());
      expect(res.status).toBe(404);
    }
  });

  it('declines: 402 stored and replayed, failed order, no charge, no payment, no journal', async () => {
    const key = nextKey();
    const body = orderBody({ paymentMethod: { token: 'tok_decline' } });
    const first = await create(key, body).expect(402);
    expect(first.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(first.body.code).toBe('card_declined');
    const again = await create(key, body).expect(402);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);

    const orders = await t.db.collection('orders').find({}).toArray();
    expect(orders).toHaveLength(1);
    expect(orders[0]).toMatchObject({ state: 'failed', failureReason: 'card_declined' });
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
    expect(await t.db.collection('payments').countDocuments()).toBe(0);
    expect(await t.db.collection('ledger_entries').countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'failed' });
  });

  it('provider down: 503 + Retry-After, nothing stored; the retry later succeeds with one charge', async () => {
    const key = nextKey();
    gateway.failNext(1);
    const down = await create(key).expect(503);
    expect(down.body.code).toBe('payment_provider_unavailable');
    expect(Number(down.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(record).toMatchObject({ status: 'pending', response: null });
    expect(record!.lease.expiresAt.getTime()).toBeLessThanOrEqual(Date.now());

    const retry = await create(key).expect(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [retry.body.id], requireSettled: true })).toEqual([]);
  });

  it('tok_provider_down is an outage every time and is never stored', async () => {
    const key = nextKey();
    const body = orderBody({ paymentMethod: { token: 'tok_provider_down' } });
    await create(key, body).expect(503);
    await create(key, body).expect(503);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'pending', response: null });
  });

  it('a crash after the provider charged is finished by the retry without a second charge', async () => {
    const key = nextKey();
    gateway.crashAfterNextCharge();
    const crashed = await create(key);
    expect(crashed.status).toBe(500);
    expect(crashed.body.code).toBe('internal_error');
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'pending' });
    // The dead worker never gave its lease back (a real crash does not): it is honoured until it expires.
    expect(faults.releasesSkipped).toBe(1);
    expect(await heldLeases(t.db, 30_000)).toBe(1);
    await t.db.collection('idempotency_records').updateOne({}, { $set: { 'lease.expiresAt': new Date(Date.now() - 1) } });

    const retry = await create(key).expect(201);
    // The crashed call and the retry's: the provider deduplicated the second on the charge key.
    expect(gateway.calls).toBe(2);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    expect(await t.db.collection('payments').countDocuments()).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [retry.body.id], requireSettled: true })).toEqual([]);
  });

  it.each([
    ['no items', { items: [] }],
    ['101 items', { items: Array.from({ length: 101 }, () => ({ sku: 's', quantity: 1, unitPriceMinor: 1 })) }],
    ['zero quantity', { items: [{ sku: 's', quantity: 0, unitPriceMinor: 1 }] }],
    ['fractional price', { items: [{ sku: 's', quantity: 1, unitPriceMinor: 1.5 }] }],
    ['negative price', { items: [{ sku: 's', quantity: 1, unitPriceMinor: -1 }] }],
    ['price as string', { items: [{ sku: 's', quantity: 1, unitPriceMinor: '100' }] }],
    ['unknown currency', { currency: 'XYZ' }],
    ['lowercase currency', { currency: 'usd' }],
    ['unknown item field', { items: [{ sku: 's', quantity: 1, unitPriceMinor: 1, discount: 5 }] }],
    ['missing payment method', { paymentMethod: undefined }],
    ['operator in customerId', { customerId: { $gt: '' } }],
  ])('refuses %s with 400 and stores nothing', async (_, patch) => {
    const res = await create(nextKey(), orderBody(patch)).expect(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });

  it.each([
    ['past the limit', [{ sku: 's', quantity: 10_000, unitPriceMinor: 100_000_000_000 }]],
    ['of zero (only free items)', [{ sku: 's', quantity: 3, unitPriceMinor: 0 }]],
  ])('refuses a total %s with 422 amount_out_of_range before claiming the key', async (_, items) => {
    const res = await create(nextKey(), orderBody({ items })).expect(422);
    expect(res.body.code).toBe('amount_out_of_range');
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
  });
});
