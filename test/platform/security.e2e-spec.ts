import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const keyA = randomBytes(32).toString('base64');
const keyB = randomBytes(32).toString('base64');

describe('security: no oracle, erasure, rate limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_security', env: { IDEMPOTENCY_ENCRYPTION_KEY: `ka:${keyA}` } });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (key: string, body: object = orderBody(), tenant: 'acme' | 'globex' = 'acme') =>
    t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', key).send(body);

  it('gives no replay oracle: unauthenticated callers get the same 401 for a used and an unused key', async () => {
    await post('k-used').expect(201);
    const used = await t.http().post('/v1/orders').set('Idempotency-Key', 'k-used').send(orderBody());
    const unused = await t.http().post('/v1/orders').set('Idempotency-Key', 'k-never').send(orderBody());
    expect(used.status).toBe(401);
    expect(unused.status).toBe(401);
    expect(used.text).toBe(unused.text);
    expect(Object.keys(used.headers).sort()).toEqual(Object.keys(unused.headers).sort());
  });

  it('gives no cross-tenant oracle: another tenant using the key with another body is a fresh request, not a 422', async () => {
    await post('k-probe', orderBody({ customerId: 'cus_secret' }), 'acme').expect(201);
    const probe = await post('k-probe', orderBody({ customerId: 'cus_guess' }), 'globex');
    expect(probe.status).toBe(201);
    expect(probe.headers['idempotent-replayed']).toBeUndefined();
    expect(probe.body.customerId).toBe('cus_guess');
    // Globex sees its own record of the key, and nothing of acme's.
    const globexView = await t.http().get('/v1/idempotency-keys/k-probe').set(auth('globex')).expect(200);
    expect(globexView.body.records).toHaveLength(1);
    expect(JSON.stringify(globexView.body)).not.toContain('cus_secret');
    expect(JSON.stringify(globexView.body)).not.toContain('acme');
    const acmeView = await t.http().get('/v1/idempotency-keys/k-probe').set(auth('acme')).expect(200);
    expect(acmeView.body.records).toHaveLength(1);
    expect(JSON.stringify(acmeView.body)).not.toContain('cus_secret');
  });

  it('erases a customer: replay no longer returns personal data, ledger amounts stay, the erasure is recorded', async () => {
    const created = await post('k-gdpr', orderBody({ customerId: 'cus_gdpr' })).expect(201);
    await post('k-other', orderBody({ customerId: 'cus_keep' })).expect(201);
    const ledgerBefore = await t.db.collection('ledger_entries').find({ orderId: created.body.id }).toArray();

    const res = await t.http().delete('/v1/customers/cus_gdpr/data').set(auth()).expect(200);
    expect(res.body.counts).toEqual({ idempotencyRecords: 1, orders: 1, outboxEvents: 1 });

    const replay = await post('k-gdpr', orderBody({ customerId: 'cus_gdpr' }));
    expect(replay.status).toBe(410);
    expect(replay.body.code).toBe('response_erased');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).not.toContain('cus_gdpr');
    expect(await t.db.collection('orders').countDocuments()).toBe(2);

    const order = await t.http().get(`/v1/orders/${created.body.id}`).set(auth()).expect(200);
    expect(order.body.customerId).toMatch(/^erased_/);
    expect(order.body.amountMinor).toBe(2500);
    expect(await t.db.collection('ledger_entries').find({ orderId: created.body.id }).toArray()).toEqual(ledgerBefore);
    const everything = JSON.stringify([
      await t.db.collection('orders').find({}).toArray(),
      await t.db.collection('outbox_events').find({}).toArray(),
      await t.db.collection('idempotency_records').find({}).toArray(),
      await t.db.collection('erasures').find({}).toArray(),
    ]);
    expect(everything).not.toContain('cus_gdpr');
    expect(everything).toContain('cus_keep');
    expect(await t.db.collection('erasures').countDocuments({ tenant: 'acme' })).toBe(1);
  });

  it('leaves nothing an erasure could be undone with: keyed digests, no pseudonym next to them (security review 2, #4)', async () => {
    const created = await post('k-reid', orderBody({ customerId: 'cus_123' })).expect(201);
    await t.http().delete('/v1/customers/cus_123/data').set(auth()).expect(200);
    const erasure = await t.db.collection('erasures').findOne({ tenant: 'acme' });
    const order = await t.db.collection('orders').findOne({ _id: created.body.id });
    // An unkeyed SHA-256 of (tenant, id) was recovered by guessing; the keyed digest is not that.
    const unkeyed = createHash('sha256').update('acme\ncus_123').digest('hex');
    expect(erasure!.subjectHash).toMatch(/^[0-9a-f]{64}$/);
    expect(erasure!.subjectHash).not.toBe(unkeyed);
    expect(erasure).not.toHaveProperty('pseudonym');
    expect(JSON.stringify(erasure)).not.toContain(order!.customerId);
    const stripes = await t.db.collection('idempotency_subjects').find({}).toArray();
    // The stripes expire (security review 2, #14): none is kept forever.
    expect(stripes.length).toBeGreaterThan(0);
    expect(stripes.every((stripe) => stripe.expiresAt instanceof Date)).toBe(true);
    // Another body under the erased key gets 422 as before the erasure; the same body its 410.
    await post('k-reid', orderBody({ customerId: 'cus_other' })).expect(422);
    await post('k-reid', orderBody({ customerId: 'cus_123' })).expect(410);
  });

  it('keeps erasure tenant-scoped', async () => {
    await post('k-t1', orderBody({ customerId: 'cus_shared' }), 'acme').expect(201);
    const res = await t.http().delete('/v1/customers/cus_shared/data').set(auth('globex')).expect(200);
    expect(res.body.counts.orders).toBe(0);
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ customerId: 'cus_shared' });
  });

  it('refuses malformed customer ids and keys on the admin routes with 400, not 500', async () => {
    await t.http().delete('/v1/customers/%24where/data').set(auth()).expect(400);
    const tab = await t.http().get('/v1/idempotency-keys/a%09b').set(auth()).expect(400);
    expect(tab.body.code).toBe('idempotency_key_invalid');
    const long = await t
      .http()
      .get(`/v1/idempotency-keys/${'x'.repeat(300)}`)
      .set(auth());
    // 300 characters is within the 765 a path parameter may take: it is the key rule (1-255) that refuses it.
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('idempotency_key_invalid');
    await t.http().get('/v1/idempotency-keys/unknown').set(auth()).expect(404);
  });

  it('keeps a JSON body with __proto__ / constructor keys harmless', async () => {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-proto')
      .set('Content-Type', 'application/json')
      .send(
        '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"customerId":"cus_1","currency":"USD","items":[{"sku":"s","quantity":1,"unitPriceMinor":1}],"paymentMethod":{"token":"tok_visa"}}',
      );
    // Refused as unknown fields (README, Security): a 400, not any 4xx.
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });

  it('admin API: shows a key without its body and releases only an expired lease', async () => {
    await post('k-admin').expect(201);
    const view = await t.http().get('/v1/idempotency-keys/k-admin').set(auth()).expect(200);
    expect(view.body.records[0]).toMatchObject({
      operation: 'orders.create',
      status: 'complete',
      responseStatus: 201,
      recoveryPoint: 'saved',
    });
    expect(view.body.records[0].body).toBeUndefined();
    await t.http().post('/v1/idempotency-keys/k-admin/release').set(auth()).expect(404);

    await t.db
      .collection('idempotency_records')
      .updateOne(
        {},
        { $set: { status: 'pending', lease: { owner: 'x', lockedAt: new Date(), expiresAt: new Date(Date.now() + 60_000) } } },
      );
    const live = await t.http().post('/v1/idempotency-keys/k-admin/release').set(auth()).expect(409);
    expect(live.body.code).toBe('idempotency_lease_active');
    expect(Number(live.headers['retry-after'])).toBeGreaterThan(50);
  });

  it('admin API: releasing an expired lease hands the key to the reaper, which reconciles it now', async () => {
    // A provider outage leaves the key pending with its lease given back (expired).
    await post('k-release', orderBody({ paymentMethod: { token: 'tok_provider_down' } })).expect(503);
    const res = await t.http().post('/v1/idempotency-keys/k-release/release').set(auth()).expect(200);
    expect(res.body).toEqual({ decision: 'abandoned' });
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'failed', response: null });
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
    await t.http().post('/v1/idempotency-keys/k-release/release').set(auth()).expect(404);
  });
});

describe('security: rate limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_ratelimit', env: { RATE_LIMIT_PER_KEY_PER_MINUTE: '3', RATE_LIMIT_PER_TENANT_PER_MINUTE: '8' } });
  });
  afterAll(async () => t.close());

  it("slows a hammered key with 429 + Retry-After without starving the tenant's other keys, then the tenant", async () => {
    const hammer = () => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-hot').send(orderBody());
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await hammer()).status);
    expect(statuses).toEqual([201, 201, 201, 429]);
    const limited = await hammer();
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-cold').send(orderBody()).expect(201);
    await t.http().post('/v1/orders').set(auth('globex')).set('Idempotency-Key', 'k-hot').send(orderBody()).expect(201);
    // The tenant's own budget (8/min) runs out too; globex is untouched.
    const more = [];
    for (let i = 0; i < 6; i++) more.push((await t.http().get('/v1/orders').set(auth())).status);
    expect(more).toContain(429);
    await t.http().get('/v1/orders').set(auth('globex')).expect(200);
    const metrics = (await t.http().get('/metrics')).text;
    expect(metrics).toMatch(/rate_limited_requests_total\{limit="key"\} [1-9]/);
    expect(metrics).toMatch(/rate_limited_requests_total\{limit="tenant"\} [1-9]/);
  });
});

describe('security: encryption key rotation', () => {
  it('replays what an old key sealed once the new key is current and the old one is kept for decryption', async () => {
    const first = await startApp({ dbName: 'test_rotation', env: { IDEMPOTENCY_ENCRYPTION_KEY: `ka:${keyA}` } });
    const created = await first.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-rot').send(orderBody()).expect(201);
    await first.close();

    const rotated = await startApp({
      dbName: 'test_rotation',
      env: { IDEMPOTENCY_ENCRYPTION_KEY: `kb:${keyB}`, IDEMPOTENCY_DECRYPTION_KEYS: `ka:${keyA}` },
      keepData: true,
    });
    try {
      const replay = await rotated.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-rot').send(orderBody()).expect(201);
      expect(replay.text).toBe(created.text);
      await rotated.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-rot2').send(orderBody()).expect(201);
      const keyIds = (await rotated.db.collection('idempotency_records').find({}).toArray()).map((r) => r.response.body.keyId).sort();
      expect(keyIds).toEqual(['ka', 'kb']);
    } finally {
      await rotated.close();
    }
  });
});

/** 1,500 by default; FUZZ_RUNS=20000 npm test explores further (the seed of a failure is printed). */
const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 1500);

describe('security: fuzzing POST /v1/orders', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_fuzz' });
  });
  afterAll(async () => t.close());

  const jsonValue = fc.jsonValue({ maxDepth: 3 });
  const item = fc.record(
    {
      sku: fc.oneof(fc.string({ maxLength: 70 }), jsonValue),
      quantity: fc.oneof(fc.integer(), fc.double(), jsonValue),
      unitPriceMinor: fc.oneof(fc.integer(), fc.double(), jsonValue),
    },
    { requiredKeys: [] },
  );
  const validBody = fc.record({
    customerId: fc.constantFrom('cus_1', 'cus_2'),
    currency: fc.constantFrom('USD', 'EUR'),
    items: fc.array(
      fc.record({
        sku: fc.constantFrom('a', 'b'),
        quantity: fc.integer({ min: 1, max: 5 }),
        unitPriceMinor: fc.integer({ min: 0, max: 10_000 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    paymentMethod: fc.constant({ token: 'tok_visa' }),
  });
  const body = fc.oneof(
    validBody,
    jsonValue,
    fc.record(
      {
        customerId: fc.oneof(fc.string({ maxLength: 80 }), jsonValue, fc.constant({ $gt: '' })),
        currency: fc.oneof(fc.constantFrom('USD', 'EUR', 'usd', 'XXX', ''), fc.string({ maxLength: 5 })),
        items: fc.oneof(fc.array(item, { maxLength: 4 }), jsonValue),
        paymentMethod: fc.oneof(fc.record({ token: fc.constantFrom('tok_visa', 'tok_decline', 'tok_$', '') }), jsonValue),
        'a.b': jsonValue,
        $where: fc.string(),
      },
      { requiredKeys: [] },
    ),
  );
  const key = fc.oneof(fc.string({ minLength: 0, maxLength: 300 }), fc.constant(undefined));
  // Raw JSON text, as an attacker writes it: JSON.stringify can never produce a lone surrogate or 1e400.
  const hostileValue = fc.constantFrom('"\\ud800"', '"a\\udfffb"', '"\\ud83d"', '1e400', '-1e309', '"\\ud83d\\ude00"', '1e308');
  const rawText = fc
    .tuple(hostileValue, hostileValue, fc.constantFrom('customerId', 'sku', 'quantity', 'extra', '\\udc00'))
    .map(
      ([a, b, slot]) =>
        `{"customerId":${slot === 'customerId' ? a : '"cus_1"'},"currency":"USD","items":[{"sku":${slot === 'sku' ? a : '"a"'},` +
        `"quantity":${slot === 'quantity' ? b : 1},"unitPriceMinor":100}],"paymentMethod":{"token":"tok_visa"}` +
        `${slot === 'extra' ? `,"extra":${b}` : ''}${slot === '\\udc00' ? `,"\\udc00":${a}` : ''}}`,
    );
  const text = fc.oneof({ weight: 3, arbitrary: body.map((payload) => JSON.stringify(payload) ?? '') }, { weight: 1, arbitrary: rawText });

  it(
    'never answers 5xx, stays up, and creates orders only from valid requests',
    async () => {
      let valid = 0;
      let declined = 0;
      await fc.assert(
        fc.asyncProperty(
          text,
          key,
          fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
          async (payload: string, idemKey, type) => {
            let req = t.http().post('/v1/orders').set(auth()).set('Content-Type', type);
            if (idemKey !== undefined && /^[\x20-\x7e]*$/.test(idemKey)) req = req.set('Idempotency-Key', idemKey);
            const res = await req.send(payload);
            expect(res.status).toBeLessThan(500);
            if (res.status === 201) valid++;
            if (res.status === 402) declined++;
          },
        ),
        { numRuns: FUZZ_RUNS },
      );
      await t.http().get('/health/live').expect(200);
      expect(valid).toBeGreaterThan(0);
      // Every order in the database came from a 201 or a stored 402 (invalid requests changed nothing).
      expect(await t.db.collection('orders').countDocuments({ state: 'saved' })).toBe(valid);
      expect(await t.db.collection('orders').countDocuments({})).toBe(valid + declined);
    },
    FUZZ_RUNS * 60,
  );
});

describe('security: erasure while the customer has an order in flight', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_erasure_inflight',
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
  });
  afterAll(async () => t.close());

  it('the order finishing after the erasure stores and publishes no personal data', async () => {
    const hold = gateway.holdNextCharge('before');
    const inFlight = t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-inflight-gdpr')
      .send(orderBody({ customerId: 'cus_gone' }))
      .then((r) => r);
    await hold.reached;
    await t.http().delete('/v1/customers/cus_gone/data').set(auth()).expect(200);
    hold.release();

    const done = await inFlight;
    expect(done.status).toBe(201);
    expect(done.body.customerId).toMatch(/^erased_/);
    const replay = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-inflight-gdpr')
      .send(orderBody({ customerId: 'cus_gone' }))
      .expect(201);
    expect(replay.text).not.toContain('cus_gone');
    const stored = JSON.stringify([
      await t.db.collection('orders').find({}).toArray(),
      await t.db.collection('outbox_events').find({}).toArray(),
      await t.db.collection('idempotency_records').find({}).toArray(),
    ]);
    expect(stored).not.toContain('cus_gone');
    // It finished already erased: its tombstone is keyed and names no subject, so a late retry is still refused.
    const tombstones = await t.db.collection('idempotency_tombstones').find({}).toArray();
    expect(tombstones).toEqual([
      expect.objectContaining({ subject: null, fingerprint: expect.objectContaining({ algorithm: 'erased-hmac-sha256:sha256-jcs-v2' }) }),
    ]);
    // The first erasure already unlinked this record (no subject digest, a keyed fingerprint): a second
    // erasure finds nothing more to erase, and its answer, built from pseudonymized data, stays.
    const again = await t.http().delete('/v1/customers/cus_gone/data').set(auth()).expect(200);
    expect(again.body.counts.idempotencyRecords).toBe(0);
    // Another body under the key gets 422, as before the erasure: the erasure is no way round the fingerprint.
    const retry = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-inflight-gdpr')
      .send(orderBody({ customerId: 'cus_other' }))
      .expect(422);
    expect(retry.body.code).toBe('idempotency_key_reused');
  });
});
