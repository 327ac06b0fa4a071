// The Redis fast path's own promises (issue 16), beyond the shared contract
// suite: what it answers without MongoDB, and that it never answers wrongly -
// another body is still 422, an erasure is never undone by a cached answer,
// and an in-flight marker nobody clears cannot hold a key past MongoDB's word.
import { afterAll, beforeAll, beforeEach, expect, it } from '@jest/globals';
import { idempotencyConfig, type IdempotencyConfig } from '../../src/config/config.tokens.js';
import type { IdempotencyRecord } from '@idempotent-orders/nest-idempotency';
import { IdempotencyFastPath, InFlightWaiters, RedisKeys, Sealer } from '@idempotent-orders/nest-idempotency/testing';
import { ErasureCacheSweep } from '../../src/privacy/erasure-cache.sweep.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { describeMode, redisMode } from '../support/store-modes.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const mode = redisMode();
const DB = 'test_fast_path';
const recordId = (key: string) => `acme:orders-service:orders.create:key:${key}`;

describeMode(mode, 'the Redis fast path', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  let keys: RedisKeys;
  let sealer: Sealer;
  const entryKey = (key: string) => keys.entry(recordId(key));
  const markerKey = (key: string) => keys.marker(recordId(key));
  /** A value as the fast path writes it: `{mac}.{json}`. */
  const jsonOf = (value: string | null) => (value === null ? null : JSON.parse(value.slice(value.indexOf('.') + 1)));

  beforeAll(async () => {
    t = await startApp({
      dbName: DB,
      env: { ...mode.env, IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '1500' },
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
    const digestKey = t.app.get<IdempotencyConfig>(idempotencyConfig.KEY).digestKey;
    keys = new RedisKeys(`idem:${DB}`, digestKey);
    sealer = new Sealer(digestKey);
  });
  beforeEach(async () => {
    await t.reset();
    gateway.reset();
  });
  afterAll(async () => t.close());

  const post = (key: string, body: object = orderBody()) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);
  const metric = async (pattern: RegExp) => Number(pattern.exec((await t.http().get('/metrics').expect(200)).text)?.[1] ?? 0);
  const lookups = () => metric(/idempotency_store_duration_seconds_count\{operation="lookup"\} (\d+)/);
  const waitReads = () => metric(/idempotency_store_duration_seconds_count\{operation="in_flight_wait"\} (\d+)/);

  it('keeps the response sealed in Redis: no body in clear, only with the fingerprint and the record expiry', async () => {
    const first = await post('k-sealed').expect(201);
    const raw = await t.redis!.get(entryKey('k-sealed'));
    expect(raw).not.toBeNull();
    expect(raw).not.toContain(first.body.paymentId);
    expect(raw).not.toContain('sku_1');
    const record = await t.db.collection('idempotency_records').findOne({});
    const entry = jsonOf(raw);
    expect(entry.fp).toEqual(record!.fingerprint);
    // Key names carry no tenant and no client key in clear (security review 2, #15).
    expect(JSON.stringify(await t.redis!.keys('*'))).not.toMatch(/k-sealed|acme/);
    expect(entry.exp).toBe(record!.expiresAt.getTime());
    const ttl = await t.redis!.pttl(entryKey('k-sealed'));
    expect(Math.abs(Date.now() + ttl - record!.expiresAt.getTime())).toBeLessThan(5000);
  });

  it('a cached key and another body: 422 from the cache, no MongoDB look-up, nothing new in the database', async () => {
    await post('k-other-body').expect(201);
    const before = await lookups();
    const res = await post('k-other-body', orderBody({ items: [{ sku: 'sku_2', quantity: 1, unitPriceMinor: 999 }] })).expect(422);
    expect(res.body.code).toBe('idempotency_key_reused');
    expect((await lookups()) - before).toBe(0);
    // A body that fails validation is refused by validation (400), never judged against the cache first.
    await post('k-other-body', { ...orderBody(), extra: true }).expect(400);
    await post('k-other-body', orderBody({ customerId: 'cus_other' })).expect(422);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 1 });
  });

  it('a replay from MongoDB warms the cache; the next replay is Redis only', async () => {
    const first = await post('k-warm').expect(201);
    await t.resetCache();
    const fromMongo = await post('k-warm').expect(201);
    expect(fromMongo.text).toBe(first.text);
    expect(await t.redis!.exists(entryKey('k-warm'))).toBe(1);
    const before = await lookups();
    expect((await post('k-warm').expect(201)).text).toBe(first.text);
    expect((await lookups()) - before).toBe(0);
  });

  it('an erasure removes the cached answer: the replay is the 410, also when a replay that read the record before writes it back', async () => {
    const first = await post('k-erase', orderBody({ customerId: 'cus_forget' })).expect(201);
    expect(await t.redis!.exists(entryKey('k-erase'))).toBe(1);
    // What a replay reads from MongoDB just before the erasure commits...
    const before = await t.db.collection<IdempotencyRecord>('idempotency_records').findOne({});
    await t.http().delete('/v1/customers/cus_forget/data').set(auth()).expect(200);
    expect(await t.redis!.exists(entryKey('k-erase'))).toBe(0);
    // ... and writes to Redis just after it: refused (the erasure marked the record).
    await t.app.get(IdempotencyFastPath).remember(recordId('k-erase'), before!);
    expect(await t.redis!.exists(entryKey('k-erase'))).toBe(0);

    const replay = await post('k-erase', orderBody({ customerId: 'cus_forget' })).expect(410);
    expect(replay.body.code).toBe('response_erased');
    expect(replay.text).not.toContain(first.body.id);
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(record).toMatchObject({ status: 'complete', fingerprint: { algorithm: 'erased-hmac-sha256:sha256-jcs-v2' }, subject: null });
    expect(record!.response.status).toBe(410);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);

    // Once the mark is gone (it lives until the record expires) the erased answer is cached like any other, with
    // the keyed fingerprint the record committed: the same body gets its 410, another body 422, an invalid one 400.
    await t.redis!.del(keys.guard(recordId('k-erase')));
    await post('k-erase', orderBody({ customerId: 'cus_forget' })).expect(410);
    expect(await t.redis!.exists(entryKey('k-erase'))).toBe(1);
    expect(jsonOf(await t.redis!.get(entryKey('k-erase'))).fp).toEqual(record!.fingerprint);
    await post('k-erase', { ...orderBody({ customerId: 'cus_forget' }), extra: true }).expect(400);
    await post('k-erase', orderBody({ customerId: 'cus_someone_else' })).expect(422);
  });

  it('an erasure that cannot tell Redis fails closed: 503, nothing committed; the retry erases and removes the cached answer', async () => {
    await post('k-erase-down', orderBody({ customerId: 'cus_down' })).expect(201);
    expect(await t.redis!.exists(entryKey('k-erase-down'))).toBe(1);
    const fingerprint = (await t.db.collection('idempotency_records').findOne({}))!.fingerprint;
    // Redis refusing every write (as with a lost replica under min-replicas-to-write): the erasure cannot reach the cache.
    await t.redis!.config('SET', 'min-replicas-to-write', '1');
    try {
      const refused = await t.http().delete('/v1/customers/cus_down/data').set(auth()).expect(503);
      // Refused before its transaction: its own code, and a detail that says nothing was erased (issue 49 item 7).
      expect(refused.body.code).toBe('cache_unavailable');
      expect(refused.body.detail).toMatch(/^Nothing was erased/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      await t.redis!.config('SET', 'min-replicas-to-write', '0');
    }
    // Nothing committed: the records, orders and erasures are as before.
    expect((await t.db.collection('idempotency_records').findOne({}))!.fingerprint).toEqual(fingerprint);
    expect(await t.db.collection('orders').countDocuments({ customerId: 'cus_down' })).toBe(1);
    expect(await t.db.collection('erasures').countDocuments()).toBe(0);
    await t.http().delete('/v1/customers/cus_down/data').set(auth()).expect(200);
    expect(await t.redis!.exists(entryKey('k-erase-down'))).toBe(0);
    await post('k-erase-down', orderBody({ customerId: 'cus_down' })).expect(410);
  });

  it('a crash between the erasure commit and telling Redis: no erased answer is served from Redis, and the sweep finishes it', async () => {
    await post('k-erase-crash', orderBody({ customerId: 'cus_crash' })).expect(201);
    expect(await t.redis!.exists(entryKey('k-erase-crash'))).toBe(1);
    const fastPath = t.app.get(IdempotencyFastPath);
    const forget = fastPath.forgetRecords.bind(fastPath);
    // The process "dies" after the commit: the deletion never reaches Redis.
    fastPath.forgetRecords = async () => false;
    try {
      // Committed, Redis not told: this is the case "recorded" describes.
      const refused = await t.http().delete('/v1/customers/cus_crash/data').set(auth()).expect(503);
      expect(refused.body.code).toBe('cache_invalidation_failed');
      expect(refused.body.detail).toMatch(/^The erasure was recorded/);
    } finally {
      fastPath.forgetRecords = forget;
    }
    // The cached 201 (with cus_crash in it) is still in Redis, but the record was marked before the commit:
    // the replay is MongoDB's 410, never the erased answer.
    expect(await t.redis!.exists(entryKey('k-erase-crash'))).toBe(1);
    const replay = await post('k-erase-crash', orderBody({ customerId: 'cus_crash' })).expect(410);
    expect(replay.text).not.toContain('cus_crash');
    const due = await t.db.collection('erasures').findOne({});
    expect(due!.cacheInvalidatedAt).toBeNull();
    // The sweep (on every instance, at the relay's interval) retries what the request could not finish.
    expect(await t.app.get(ErasureCacheSweep).finishDue(0)).toBe(1);
    expect(await t.redis!.exists(entryKey('k-erase-crash'))).toBe(0);
    expect((await t.db.collection('erasures').findOne({}))!.cacheInvalidatedAt).toBeInstanceOf(Date);
    expect(await t.app.get(ErasureCacheSweep).finishDue(0)).toBe(0);
  });

  it('a forged entry is a miss: status, Location, fingerprint and expiry are authenticated (security review 2, #1)', async () => {
    const first = await post('k-forged').expect(201);
    const raw = await t.redis!.get(entryKey('k-forged'));
    const [mac] = raw!.split('.', 1);
    const entry = jsonOf(raw);
    const forged = {
      ...entry,
      status: 200,
      headers: { ...entry.headers, location: 'https://evil.example/phish' },
      fp: { algorithm: 'erased', value: '' },
      exp: Date.parse('2100-01-01'),
    };
    await t.redis!.set(entryKey('k-forged'), `${mac}.${JSON.stringify(forged)}`, 'PX', 60_000);
    // Another body: MongoDB's 422, not the stored answer.
    await post('k-forged', orderBody({ customerId: 'cus_other' })).expect(422);
    // The same body: the genuine answer from MongoDB.
    const replay = await post('k-forged').expect(201);
    expect(replay.headers['location']).toBe(first.headers['location']);
    // An entry moved from another key does not verify either.
    await post('k-source').expect(201);
    await t.redis!.set(entryKey('k-forged'), (await t.redis!.get(entryKey('k-source')))!, 'PX', 60_000);
    expect((await post('k-forged').expect(201)).body.id).toBe(first.body.id);
  });

  it('a duplicate waits on the marker in Redis, not on MongoDB, while the first request runs; one order', async () => {
    const hold = gateway.holdNextCharge();
    const first = post('k-marker').then((r) => r);
    await hold.reached;
    expect(await t.redis!.exists(markerKey('k-marker'))).toBe(1);
    const [lookupsBefore, readsBefore] = [await lookups(), await waitReads()];
    const second = post('k-marker').then((r) => r);
    // It is waiting on the marker before the original finishes (a count, not a timer): otherwise it is a plain replay.
    const waiters = t.app.get(InFlightWaiters);
    for (let i = 0; i < 500 && waiters.size < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(waiters.size).toBe(1);
    hold.release();
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.text).toBe(a.text);
    expect((await lookups()) - lookupsBefore).toBe(0);
    expect((await waitReads()) - readsBefore).toBe(0);
    expect(await t.redis!.exists(markerKey('k-marker'))).toBe(0);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [a.body.id], requireSettled: true })).toEqual([]);
  });

  it('a marker whose owner crashed never outlasts MongoDB: past the wait, the record (lease expired) is taken over and finished', async () => {
    gateway.crashAfterNextCharge();
    await post('k-dead-owner').expect(500);
    // The crash left its lease (expired now) and, in Redis, a marker nobody will clear - long-lived, worst case.
    await t.db.collection('idempotency_records').updateOne({}, { $set: { 'lease.expiresAt': new Date(Date.now() - 1) } });
    const record = await t.db.collection('idempotency_records').findOne({});
    await t.redis!.set(markerKey('k-dead-owner'), JSON.stringify({ owner: 'dead-worker', fp: record!.fingerprint }), 'PX', 60_000);
    const order = await t.db.collection('orders').findOne({});

    const started = Date.now();
    const retry = await post('k-dead-owner').expect(201);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(retry.body.id).toBe(order!._id);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 1 });
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [retry.body.id], requireSettled: true })).toEqual([]);
  });

  it('a live marker and a live lease: 409 after the wait, confirmed by one MongoDB read, and the key still finishes once', async () => {
    const hold = gateway.holdNextCharge();
    const first = post('k-still-running').then((r) => r);
    await hold.reached;
    const before = await lookups();
    const conflict = await post('k-still-running').expect(409);
    expect(conflict.body.code).toBe('idempotency_key_in_use');
    expect(conflict.headers['retry-after']).toBe('1');
    expect((await lookups()) - before).toBe(1);
    hold.release();
    expect((await first).status).toBe(201);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
  });

  it('an entry past the record expiry is not served: MongoDB decides (here: the tombstone, not a new order)', async () => {
    await post('k-expired').expect(201);
    const raw = jsonOf(await t.redis!.get(entryKey('k-expired')));
    await t.db.collection('idempotency_records').updateOne({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = sealer.seal(recordId('k-expired'), JSON.stringify({ ...raw, exp: Date.now() - 1000 }));
    await t.redis!.set(entryKey('k-expired'), expired, 'PX', 60_000);
    const late = await post('k-expired').expect(409);
    expect(late.body.code).toBe('idempotency_key_expired');
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(1);
  });
});
