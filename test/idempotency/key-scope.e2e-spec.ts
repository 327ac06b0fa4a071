import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { fingerprintRequest } from '@idempotent-orders/nest-idempotency/testing';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

type Doc = { _id: string } & Record<string, unknown>;

/** The key scope (tenant, operation, client key) is what the promise is about, not a record id. */
describe('one key, one owner: record ids and the invariant checker', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_key_scope' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const now = () => new Date();
  const record = (id: string, clientKey: string, overrides: Record<string, unknown> = {}): Doc => ({
    _id: id,
    tenant: 'acme',
    operation: 'orders.create',
    clientKey,
    status: 'pending',
    fingerprint: fingerprintRequest('POST', '/v1/orders', orderBody()),
    schemaVersion: 1,
    ttlSeconds: 86400,
    attempt: 1,
    lease: { owner: 'other-instance', lockedAt: now(), expiresAt: new Date(Date.now() + 30_000) },
    recoveryPoint: null,
    subject: null,
    response: null,
    createdAt: now(),
    updatedAt: now(),
    expiresAt: new Date(Date.now() + 86_400_000),
    purgeAt: null,
    ...overrides,
  });
  const order = (id: string, recordId: string): Doc => ({
    _id: id,
    tenant: 'acme',
    customerId: 'cus_123',
    currency: 'USD',
    items: [{ sku: 'sku_1', quantity: 1, unitPriceMinor: 100 }],
    amountMinor: 100,
    paymentToken: 'tok_visa',
    state: 'pending',
    stateHistory: { pending: now() },
    failureReason: null,
    paymentId: null,
    idempotency: { recordId, attempt: 1 },
    createdAt: now(),
    updatedAt: now(),
  });

  it('a key held under a record id of an earlier release (v{N} in it) is still owned by it and visible to the admin API', async () => {
    await t.db.collection<Doc>('idempotency_records').insertOne(record('acme:orders-service:orders.create:v1:k-legacy', 'k-legacy'));

    const view = await t.http().get('/v1/idempotency-keys/k-legacy').set(auth()).expect(200);
    expect(view.body.records).toEqual([expect.objectContaining({ operation: 'orders.create', schemaVersion: 1, status: 'pending' })]);
    // A retry while the earlier release's attempt is live waits for it (409), it does not start a second one.
    const retry = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-legacy').send(orderBody()).expect(409);
    expect(retry.body.code).toBe('idempotency_key_in_use');
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(1);
  });

  it('the invariant checker sees two records and two live orders of one key under different record ids', async () => {
    await t.db
      .collection<Doc>('idempotency_records')
      .insertMany([
        record('acme:orders-service:orders.create:v1:k-twice', 'k-twice'),
        record('acme:orders-service:orders.create:v2:k-twice', 'k-twice', { schemaVersion: 2 }),
      ]);
    await t.db
      .collection<Doc>('orders')
      .insertMany([
        order('ord_aaaaaaaaaaaaaaaaaaaaaaaa', 'acme:orders-service:orders.create:v1:k-twice'),
        order('ord_bbbbbbbbbbbbbbbbbbbbbbbb', 'acme:orders-service:orders.create:v2:k-twice'),
      ]);
    const violations = await findViolations(t);
    expect(violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/k-twice.*2 live idempotency records/),
        expect.stringMatching(/k-twice.*2 live orders/),
      ]),
    );
  });

  it('the invariant checker does not count an order of an earlier retention window of the key', async () => {
    const earlier = new Date(Date.now() - 3_600_000);
    await t.db.collection<Doc>('idempotency_records').insertOne(record('acme:orders-service:orders.create:key:k-reused', 'k-reused'));
    await t.db
      .collection<Doc>('orders')
      .insertMany([
        { ...order('ord_cccccccccccccccccccccccc', 'acme:orders-service:orders.create:key:k-reused'), createdAt: earlier },
        order('ord_dddddddddddddddddddddddd', 'acme:orders-service:orders.create:key:k-reused'),
      ]);
    expect((await findViolations(t)).filter((violation) => violation.includes('live orders'))).toEqual([]);
  });
});
