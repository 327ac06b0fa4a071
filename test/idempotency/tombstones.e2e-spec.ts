import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/*
 * Late retries (README "Tombstones"): past its 1 s retention a key's stored
 * response is forgotten, but the same key and body are still recognised and
 * refused with a pointer at the original order - never charged again.
 */
describe('tombstones: a late retry never charges again', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_tombstones', env: { IDEMPOTENCY_TTL_SECONDS: '1' } });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (key: string, body: object = orderBody()) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);
  const pastRetention = () => new Promise((resolve) => setTimeout(resolve, 1100));
  const count = async () => ({
    orders: await t.db.collection('orders').countDocuments(),
    charges: await t.simulatorDb.collection('charges').countDocuments(),
  });

  it('answers the same body after retention with 409 idempotency_key_expired and the original Location: no new order, no charge', async () => {
    const first = await post('k-late').expect(201);
    await pastRetention();
    const late = await post('k-late').expect(409);
    expect(late.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(late.headers['location']).toBe(first.headers['location']);
    expect(late.headers['idempotent-replayed']).toBeUndefined();
    expect(late.body).toMatchObject({ code: 'idempotency_key_expired', originalStatus: 201, location: `/v1/orders/${first.body.id}` });
    // Stable: asking again gets the same answer.
    const again = await post('k-late').expect(409);
    expect(again.body).toEqual(late.body);
    expect(await count()).toEqual({ orders: 1, charges: 1 });
    // The expired record was not replaced: it still belongs to the first order's request.
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(record!.status).toBe('complete');
    const metrics = await t.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/idempotency_late_retries_total\{operation="orders.create"\} 2/);
  });

  it('answers it the same way once the record itself is purged (the key is absent)', async () => {
    const first = await post('k-purged').expect(201);
    await pastRetention();
    await t.db.collection('idempotency_records').deleteMany({}); // what the purge_ttl index does, without waiting a minute for it
    const late = await post('k-purged').expect(409);
    expect(late.headers['location']).toBe(first.headers['location']);
    expect(await count()).toEqual({ orders: 1, charges: 1 });
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
  });

  it('treats another body under the same key after retention as a new request', async () => {
    const first = await post('k-other').expect(201);
    await pastRetention();
    const second = await post('k-other', orderBody({ customerId: 'cus_other' })).expect(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect(await count()).toEqual({ orders: 2, charges: 2 });
    // Each answered body keeps its own tombstone: the first body is still refused after the second is forgotten too.
    expect(await t.db.collection('idempotency_tombstones').countDocuments()).toBe(2);
    await pastRetention();
    expect((await post('k-other').expect(409)).headers['location']).toBe(first.headers['location']);
  });

  it('keeps no body and no personal data, only the compact fields, with its own expiry', async () => {
    const first = await post('k-compact').expect(201);
    const [tombstone] = await t.db.collection('idempotency_tombstones').find({}).toArray();
    expect(Object.keys(tombstone).sort()).toEqual(
      ['_id', 'expiresAt', 'finishedAt', 'fingerprint', 'location', 'scope', 'status', 'subject'].sort(),
    );
    expect(tombstone).toMatchObject({ status: 201, location: first.headers['location'] });
    const text = JSON.stringify(tombstone);
    for (const secret of ['cus_123', 'k-compact', 'tok_visa', 'sku_1']) expect(text).not.toContain(secret);
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(tombstone.subject).toBe(record!.subject);
    // 30 days (the default) past the record's retention.
    expect(tombstone.expiresAt.getTime() - record!.expiresAt.getTime()).toBe(30 * 24 * 3600 * 1000);
  });

  it('has a TTL index on its own expiry, built at boot', async () => {
    const indexes = await t.db.collection('idempotency_tombstones').indexes();
    expect(indexes).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'tombstone_ttl', key: { expiresAt: 1 }, expireAfterSeconds: 0 })]),
    );
  });

  it('ignores a tombstone past its own expiry even before the TTL monitor removes it', async () => {
    await post('k-dead').expect(201);
    await pastRetention();
    await t.db.collection('idempotency_tombstones').updateMany({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    await post('k-dead').expect(201);
    expect(await count()).toEqual({ orders: 2, charges: 2 });
  });

  it("keeps an erased customer's tombstones, keyed and without their subject: a late retry still never charges twice", async () => {
    await post('k-erased').expect(201);
    await post('k-kept', orderBody({ customerId: 'cus_kept' })).expect(201);
    const before = await t.db.collection('idempotency_tombstones').find({}).toArray();
    expect(before).toHaveLength(2);
    await t.http().delete('/v1/customers/cus_123/data').set(auth()).expect(200);
    const left = await t.db.collection('idempotency_tombstones').find({}).toArray();
    expect(left).toHaveLength(2);
    // The erased customer's tombstone is there without its subject (asserted, so an erasure that leaves it as it was
    // fails here on the rule, not later on a missing object).
    expect(left.filter((tombstone) => tombstone.subject === null)).toHaveLength(1);
    const erased = left.find((tombstone) => tombstone.subject === null)!;
    const plain = before.find((tombstone) => tombstone.scope === erased.scope)!;
    // Nothing of the erased body's plain hash, nor the subject digest, is left behind.
    expect(erased.fingerprint.algorithm).toBe('erased-hmac-sha256:sha256-jcs-v2');
    expect(JSON.stringify(left)).not.toContain(plain.fingerprint.value);
    expect(JSON.stringify(left)).not.toContain(plain.subject);
    expect(erased.location).toBe(plain.location);
    await pastRetention();
    const late = await post('k-erased').expect(409);
    expect(late.body.code).toBe('idempotency_key_expired');
    expect(late.headers['location']).toBe(plain.location);
    await post('k-kept', orderBody({ customerId: 'cus_kept' })).expect(409);
    // Another body under the erased key is a new request, as for any tombstone.
    await post('k-erased', orderBody({ customerId: 'cus_new' })).expect(201);
    expect(await count()).toEqual({ orders: 3, charges: 3 });
    expect(await t.db.collection('orders').countDocuments({ customerId: 'cus_123' })).toBe(0);
  });
});
