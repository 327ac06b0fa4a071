import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Clock } from '../../src/common/clock.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** The server's clock, movable forward: the guard's window is measured on it. */
class MovableClock extends Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

const WINDOW_SECONDS = 60;

function client(t: () => TestApp) {
  const post = (key: string, body: object = orderBody(), tenant: 'acme' | 'globex' = 'acme', headers: Record<string, string> = {}) =>
    t().http().post('/v1/orders').set(auth(tenant)).set(headers).set('Idempotency-Key', key).send(body);
  const count = (collection: string) => t().db.collection(collection).countDocuments();
  const charges = () => t().simulatorDb.collection('charges').countDocuments();
  return { post, count, charges };
}

describe('Duplicate guard off (the default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_duplicate_guard_off' });
  });
  afterAll(async () => t.close());
  const { post, count, charges } = client(() => t);

  it('the same body under two keys is two orders, two charges', async () => {
    const first = await post('off-1').expect(201);
    const second = await post('off-2').expect(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect(await count('orders')).toBe(2);
    expect(await charges()).toBe(2);
    expect(await count('idempotency_duplicate_guard')).toBe(0);
  });
});

describe('Duplicate guard on POST /v1/orders (DUPLICATE_GUARD_WINDOW_SECONDS, DUPLICATE_GUARD_TENANTS=acme)', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  const clock = new MovableClock();
  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_duplicate_guard',
      env: { DUPLICATE_GUARD_WINDOW_SECONDS: String(WINDOW_SECONDS), DUPLICATE_GUARD_TENANTS: 'acme', IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0' },
      override: (builder) => builder.overrideProvider(Clock).useValue(clock).overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
  });
  beforeEach(async () => {
    await t.reset();
    gateway.reset();
    clock.offsetMs = 0;
  });
  afterAll(async () => t.close());
  const { post, count, charges } = client(() => t);

  const expectClean = async () => expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb, now: clock.now() })).toEqual([]);

  it('answers a second key with the same body 409 possible_duplicate, Location of the first order; one order, one charge', async () => {
    const first = await post('dup-1').expect(201);
    const second = await post('dup-2').expect(409);
    expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(second.body).toMatchObject({
      status: 409,
      code: 'possible_duplicate',
      location: first.headers.location,
      retryable: false,
      reuseKey: false,
      newKeySafe: false,
    });
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers['retry-after']).toBeUndefined();
    expect(await count('orders')).toBe(1);
    expect(await count('idempotency_records')).toBe(1);
    expect(await charges()).toBe(1);
    // The refused claim was rolled back: its key is free, and the guard still points at the first record.
    const [entry] = await t.db.collection('idempotency_duplicate_guard').find().toArray();
    expect(entry.recordId).toMatch(/:key:dup-1$/);
    expect(entry._id).not.toContain('cus_123');
    await expectClean();
  });

  it('replays a retry of the same key as before (not a duplicate)', async () => {
    const first = await post('same-1').expect(201);
    const again = await post('same-1').expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await count('orders')).toBe(1);
    expect(await charges()).toBe(1);
  });

  it('lets another body through, and a body a moment later counts only as itself', async () => {
    await post('body-1').expect(201);
    await post('body-2', orderBody({ customerId: 'cus_other' })).expect(201);
    expect(await count('orders')).toBe(2);
  });

  it('Idempotency-Intent: new makes a second order, which then holds the body for the next blind retry', async () => {
    await post('intent-1').expect(201);
    const second = await post('intent-2', orderBody(), 'acme', { 'Idempotency-Intent': 'new' }).expect(201);
    expect(await count('orders')).toBe(2);
    expect(await charges()).toBe(2);
    const third = await post('intent-3').expect(409);
    expect(third.body.code).toBe('possible_duplicate');
    expect(third.headers.location).toBe(second.headers.location);
    expect(await count('orders')).toBe(2);
    await expectClean();
  });

  it('refuses a malformed Idempotency-Intent with 400 before anything is written', async () => {
    const res = await post('intent-bad', orderBody(), 'acme', { 'Idempotency-Intent': 'yes' }).expect(400);
    expect(res.body.code).toBe('idempotency_intent_invalid');
    expect(await count('idempotency_records')).toBe(0);
  });

  it('allows the same body under a new key after the window', async () => {
    await post('window-1').expect(201);
    clock.offsetMs = (WINDOW_SECONDS + 1) * 1000;
    await post('window-2').expect(201);
    expect(await count('orders')).toBe(2);
    expect(await charges()).toBe(2);
    // And the new order holds the body for a window of its own.
    await post('window-3').expect(409);
    await expectClean();
  });

  it('leaves a tenant not listed in DUPLICATE_GUARD_TENANTS alone', async () => {
    await post('globex-1', orderBody(), 'globex').expect(201);
    await post('globex-2', orderBody(), 'globex').expect(201);
    expect(await count('orders')).toBe(2);
    expect(await count('idempotency_duplicate_guard')).toBe(0);
  });

  it('does not count a declined first request as the earlier result: the next key runs', async () => {
    const declined = orderBody({ paymentMethod: { token: 'tok_decline' } });
    await post('declined-1', declined).expect(402);
    await post('declined-2', declined).expect(402);
    expect(await count('orders')).toBe(2);
  });

  it('answers 409 possible_duplicate with Retry-After (no Location yet) while the first is still in flight', async () => {
    const hold = gateway.holdNextCharge('before');
    const first = post('flight-1').then((res) => res);
    await hold.reached;
    const second = await post('flight-2').expect(409);
    expect(second.body.code).toBe('possible_duplicate');
    expect(second.headers.location).toBeUndefined();
    expect(second.headers['retry-after']).toBe('1');
    hold.release();
    const done = await first;
    expect(done.status).toBe(201);
    // The retry of the refused request now gets the first order's Location.
    const retry = await post('flight-2').expect(409);
    expect(retry.headers.location).toBe(done.headers.location);
    expect(await count('orders')).toBe(1);
    expect(await charges()).toBe(1);
    await expectClean();
  });

  it('lets exactly one of 10 concurrent keys with one body through', async () => {
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`race-${i}`)));
    const statuses = replies.map((res) => res.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(9);
    for (const res of replies.filter((reply) => reply.status === 409)) expect(res.body.code).toBe('possible_duplicate');
    expect(await count('orders')).toBe(1);
    expect(await count('idempotency_records')).toBe(1);
    expect(await charges()).toBe(1);
    await expectClean();
  });
});
