// Stored data survives the package move (issue 23, item 8): the documents in
// test/fixtures/idempotency-golden-v1.json were written by this service
// before the idempotency layer became packages/nest-idempotency (commit
// 58bde44, through POST /v1/orders and DELETE /v1/customers/:id/data). Loaded
// as they are - only their dates moved to today, which no id, fingerprint or
// sealed byte depends on - they must replay, refuse, tombstone and stay
// erased exactly as before: record ids, fingerprints, sealed responses
// (AES-GCM with the record id as AAD), tombstone ids and collection names
// are byte-compatible.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { EJSON } from 'bson';
import { fingerprintRequest } from '@idempotent-orders/nest-idempotency/testing';
import { orderBody } from '../support/fixtures.js';
import { auth, startApp, type TestApp } from '../support/test-app.js';

interface Golden {
  capturedAt: Date;
  answers: Record<string, { status: number; text?: string; headers?: Record<string, string> }>;
  [collection: string]: unknown;
}

const golden = EJSON.parse(readFileSync(new URL('../fixtures/idempotency-golden-v1.json', import.meta.url), 'utf8'), {
  relaxed: false,
}) as Golden;
const COLLECTIONS = ['idempotency_records', 'idempotency_tombstones', 'idempotency_meta'];
const saved = orderBody({ customerId: 'cus_golden_kept' });
const declined = orderBody({ customerId: 'cus_golden_kept', paymentMethod: { token: 'tok_decline' } });
const erased = orderBody({ customerId: 'cus_golden_erased' });

/** Every Date in a document moved by `shiftMs`: the documents are as old, relative to now, as when they were written. */
function shifted<T>(value: T, shiftMs: number): T {
  if (value instanceof Date) return new Date(value.getTime() + shiftMs) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => shifted(item, shiftMs)) as T;
  if (value && typeof value === 'object' && value.constructor === Object) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, shifted(item, shiftMs)])) as T;
  }
  return value;
}

describe('records written before the package move (golden documents)', () => {
  let t: TestApp;
  const send = (key: string, body: object) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);

  beforeAll(async () => {
    t = await startApp({ dbName: 'golden_records_test' });
  });
  beforeEach(async () => {
    await t.reset();
    const shiftMs = Date.now() - golden.capturedAt.getTime();
    for (const name of COLLECTIONS) {
      await t.db.collection(name).deleteMany({});
      const documents = shifted((golden[name] ?? []) as Record<string, unknown>[], shiftMs);
      if (documents.length > 0) await t.db.collection(name).insertMany(documents as never[]);
    }
  });
  afterAll(async () => t?.close());

  it('holds what it says: three records under the service name, sealed responses, tombstones', () => {
    const records = golden.idempotency_records as { _id: string; response: unknown }[];
    expect(records.map((record) => record._id).sort()).toEqual([
      'acme:orders-service:orders.create:key:golden-declined',
      'acme:orders-service:orders.create:key:golden-erased',
      'acme:orders-service:orders.create:key:golden-saved',
    ]);
    expect((golden.idempotency_tombstones as unknown[]).length).toBeGreaterThanOrEqual(3);
  });

  it('computes the same fingerprint for the same request', () => {
    const record = (golden.idempotency_records as { _id: string; fingerprint: { algorithm: string; value: string } }[]).find((r) =>
      r._id.endsWith(':golden-saved'),
    )!;
    expect(record.fingerprint.algorithm).toBe('sha256-jcs-v2');
    expect(fingerprintRequest('POST', '/v1/orders', saved).value).toBe(record.fingerprint.value);
  });

  it('replays the stored 201 and 402 byte for byte, marked replayed, and runs nothing', async () => {
    const created = await send('golden-saved', saved);
    expect(created.status).toBe(201);
    expect(created.text).toBe(golden.answers.saved.text);
    expect(created.headers.location).toBe(golden.answers.saved.headers!.location);
    expect(created.headers['idempotent-replayed']).toBe('true');
    const refused = await send('golden-declined', declined);
    expect(refused.status).toBe(402);
    expect(refused.text).toBe(golden.answers.declined.text);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
  });

  it('still refuses another body under an old key (422)', async () => {
    const other = await send('golden-saved', orderBody({ customerId: 'cus_golden_kept', currency: 'EUR' }));
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
  });

  it("keeps an erased subject's answer erased (410), whatever the retry", async () => {
    const retry = await send('golden-erased', erased);
    expect(retry.status).toBe(410);
    expect(retry.text).toBe(golden.answers.erasedAfter.text);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });

  it('answers a late retry from the old tombstone once the record is gone (409 idempotency_key_expired, the old Location)', async () => {
    await t.db.collection('idempotency_records').deleteOne({ _id: 'acme:orders-service:orders.create:key:golden-saved' as never });
    const late = await send('golden-saved', saved);
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('idempotency_key_expired');
    expect(late.headers.location).toBe(golden.answers.saved.headers!.location);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
  });
});

// Cancel by key (issue 24 item 3): the canceled record state, as the first
// release that had it wrote it (test/fixtures/idempotency-golden-canceled-v1.json:
// a never-run key, a declined order and an attempt stopped in flight, each
// canceled through POST /v1/idempotency-keys/:key/cancel). Later releases
// must keep refusing them, and keep answering a repeat of their cancel the same.
const canceledGolden = EJSON.parse(readFileSync(new URL('../fixtures/idempotency-golden-canceled-v1.json', import.meta.url), 'utf8'), {
  relaxed: false,
}) as Golden;

describe('canceled keys as the first release with cancels stored them (golden documents)', () => {
  let t: TestApp;
  let shiftMs: number;
  const send = (key: string, body: object) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);
  const cancel = (key: string) => t.http().post(`/v1/idempotency-keys/${key}/cancel`).set(auth());
  const answer = (name: string) =>
    canceledGolden.answers[name] as {
      status: number;
      text?: string;
      body?: Record<string, unknown>;
      headers?: Record<string, string | null>;
    };

  beforeAll(async () => {
    t = await startApp({ dbName: 'golden_canceled_test' });
  });
  beforeEach(async () => {
    await t.reset();
    shiftMs = Date.now() - canceledGolden.capturedAt.getTime();
    for (const name of COLLECTIONS) await t.db.collection(name).deleteMany({});
    for (const source of [golden, canceledGolden]) {
      for (const name of COLLECTIONS) {
        const sourceShiftMs = source === canceledGolden ? shiftMs : Date.now() - source.capturedAt.getTime();
        const documents = shifted((source[name] ?? []) as Record<string, unknown>[], sourceShiftMs);
        if (documents.length > 0) await t.db.collection(name).insertMany(documents as never[]);
      }
    }
  });
  afterAll(async () => t?.close());

  it('refuses every request under them byte for byte (409 idempotency_key_canceled, the order in Location), running nothing', async () => {
    for (const [key, name, body] of [
      ['golden-canceled-never', 'refusedNever', saved],
      ['golden-canceled-declined', 'refusedDeclined', declined],
      ['golden-canceled-stopped', 'refusedStopped', orderBody({ customerId: 'cus_golden_other' })],
    ] as const) {
      const refused = await send(key, body);
      expect([key, refused.status, refused.text]).toEqual([key, 409, answer(name).text]);
      expect(refused.headers.location).toBe(answer(name).headers!.location ?? undefined);
    }
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
    expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
  });

  it('answers a repeat of their cancel as the first time, changing nothing', async () => {
    const before = await t.db.collection('idempotency_records').find({}).sort({ _id: 1 }).toArray();
    for (const [key, name] of [
      ['golden-canceled-never', 'cancelNever'],
      ['golden-canceled-declined', 'cancelDeclined'],
      ['golden-canceled-stopped', 'cancelStopped'],
    ] as const) {
      const repeat = await cancel(key).expect(200);
      const first = answer(name).body!;
      expect(repeat.body).toEqual({ ...first, canceledAt: new Date(Date.parse(first.canceledAt as string) + shiftMs).toISOString() });
    }
    expect(await t.db.collection('idempotency_records').find({}).sort({ _id: 1 }).toArray()).toEqual(before);
  });

  it('shows them canceled in the key view, and the records written before cancels existed with no cancellation', async () => {
    const canceled = await t.http().get('/v1/idempotency-keys/golden-canceled-stopped').set(auth()).expect(200);
    expect(canceled.body.records).toEqual([
      expect.objectContaining({ status: 'canceled', cancellation: expect.objectContaining({ outcome: 'canceled_before_charge' }) }),
    ]);
    expect(canceled.headers.location).toBe(answer('refusedStopped').headers!.location);
    const old = await t.http().get('/v1/idempotency-keys/golden-saved').set(auth()).expect(200);
    expect(old.body.records).toEqual([expect.objectContaining({ status: 'complete', cancellation: null })]);
  });

  it('cancels a record written before cancels existed: a declined key has nothing to undo, then refuses its own body', async () => {
    const res = await cancel('golden-declined').expect(200);
    expect(res.body).toMatchObject({ status: 'canceled', outcome: 'nothing_to_undo' });
    const refused = await send('golden-declined', declined);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('idempotency_key_canceled');
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });
});
