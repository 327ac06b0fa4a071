import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { getConnectionToken } from '@nestjs/mongoose';
import { createHash } from 'node:crypto';
import mongoose, { type ClientSession, type Connection } from 'mongoose';
import type { Db } from 'mongodb';
import { fingerprintRequest } from '@idempotent-orders/nest-idempotency/testing';
import { OrderRepository } from '../../src/orders/order.repository.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { onEmulator } from '../support/backend.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Write {
  collection: string;
  method: string;
  target: string | null;
}

/** The _ids a write names: inserted documents, a filter's _id, or each statement's of a bulk write. */
function writtenIds(method: string, first: unknown): (string | null)[] {
  const idOf = (value: unknown) => (typeof (value as { _id?: unknown })?._id === 'string' ? (value as { _id: string })._id : null);
  if (method === 'insertMany') return (first as unknown[]).map(idOf);
  if (method === 'bulkWrite') return (first as Record<string, { filter?: unknown }>[]).map((op) => idOf(Object.values(op)[0]?.filter));
  return [idOf(first)];
}

/** The documents each transaction wrote, by _id, captured from mongoose's operation-start events. */
function captureTransactionWrites(connection: Connection): Map<ClientSession, Write[]> {
  const writes = new Map<ClientSession, Write[]>();
  connection.on('operation-start', (operation: { collectionName: string; method: string; params: unknown[] }) => {
    const options = operation.params.find((param): param is { session: ClientSession } => !!(param as { session?: unknown })?.session);
    if (!options?.session.inTransaction()) return;
    const ids = writtenIds(operation.method, operation.params[0]);
    const list = writes.get(options.session) ?? [];
    for (const id of ids)
      list.push({
        collection: operation.collectionName,
        method: operation.method,
        target: id ? `${operation.collectionName}/${id}` : null,
      });
    writes.set(options.session, list);
  });
  return writes;
}

describe('erasure: a concurrent claim cannot slip past it, and nothing of the body survives it', () => {
  let t: TestApp;
  let gateway: ControllableGateway;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_erasure',
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
  });
  beforeEach(async () => {
    await t.reset();
    gateway.reset();
  });
  afterAll(async () => t.close());

  const post = (key: string, body: object) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);
  const erase = (customerId: string) => t.http().delete(`/v1/customers/${customerId}/data`).set(auth()).expect(200);

  it('a claim and an erasure of one customer write one common document, so under snapshot isolation they conflict', async () => {
    const writes = captureTransactionWrites(t.app.get<Connection>(getConnectionToken()));
    // The customer has nothing yet: the erasure finds no record and no order to change.
    await erase('cus_meet');
    await post('k-meet', orderBody({ customerId: 'cus_meet' })).expect(201);

    const transactions = [...writes.values()];
    const erasure = transactions.find((tx) => tx.some((write) => write.collection === 'erasures'))!;
    const claim = transactions.find((tx) => tx.some((write) => write.collection === 'orders' && write.method === 'insertMany'))!;
    const erasureTargets = new Set(erasure.map((write) => write.target).filter(Boolean));
    const common = claim.map((write) => write.target).filter((target) => target && erasureTargets.has(target));
    expect(common).not.toEqual([]);
  });

  it('writes no unkeyed digest of the erased customer anywhere; a stripe of the previous release that exists is still marked (SEC4-01)', async () => {
    // The previous release's form: SHA-256(tenant \n customer), recoverable by a dictionary over customer ids.
    const unkeyed = (customerId: string) => createHash('sha256').update(`acme\n${customerId}`).digest('hex');
    /** Every collection of the database whose serialized documents contain `needle`, with one hit each. */
    const scan = async (db: Db, needle: string) => {
      const hits: string[] = [];
      // Every collection: listed by the server, or (the emulator has no listCollections) every model's of every connection.
      const listed = await db
        .listCollections({}, { nameOnly: true })
        .toArray()
        .then((collections) => collections.map((c) => c.name))
        .catch(() => null);
      const names = listed ?? [
        ...new Set([...mongoose.connections.flatMap((c) => Object.values(c.models).map((m) => m.collection.collectionName)), 'charges']),
      ];
      if (db === t.db) expect(names).toEqual(expect.arrayContaining(['idempotency_subjects', 'erasures', 'orders']));
      for (const name of names) {
        for (const doc of await db.collection(name).find().toArray()) {
          if (JSON.stringify(doc).includes(needle)) hits.push(`${db.databaseName}.${name}: ${JSON.stringify(doc).slice(0, 120)}`);
        }
      }
      return hits;
    };

    await post('k-unkeyed', orderBody({ customerId: 'cus_unkeyed' })).expect(201);
    await erase('cus_unkeyed');
    const hits = [...(await scan(t.db, unkeyed('cus_unkeyed'))), ...(await scan(t.simulatorDb, unkeyed('cus_unkeyed')))];
    expect(hits).toEqual([]);

    type Stripe = { _id: string; updatedAt: Date; erasedAt: Date | null; expiresAt: Date };
    // A deployment that ran the previous release has its stripes: those are still found and marked.
    const legacyStripe = `${unkeyed('cus_old')}:3`;
    await t.db
      .collection<Stripe>('idempotency_subjects')
      .insertOne({ _id: legacyStripe, updatedAt: new Date(0), erasedAt: null, expiresAt: new Date(Date.now() + 3_600_000) });
    await erase('cus_old');
    const legacy = await t.db
      .collection<Stripe>('idempotency_subjects')
      .find({ _id: { $regex: `^${unkeyed('cus_old')}:` } })
      .toArray();
    expect(legacy.map((stripe) => stripe._id)).toEqual([legacyStripe]);
    expect(legacy[0].erasedAt).toBeInstanceOf(Date);
  });

  it('keeps only a keyed fingerprint of the erased body: the same body gets the stored 410, another body 422 as before', async () => {
    const body = orderBody({ customerId: 'cus_fp' });
    await post('k-fp', body).expect(201);
    await erase('cus_fp');

    const raw = await t.db.collection('idempotency_records').findOne({ clientKey: 'k-fp' });
    // A low-entropy body (customer id, items) could be guessed and checked against an unkeyed hash of it:
    // only an HMAC under the deployment's digest key is left (no oracle without that key).
    expect(raw!.fingerprint.algorithm).toBe('erased-hmac-sha256:sha256-jcs-v2');
    expect(raw!.fingerprint.value).not.toBe(fingerprintRequest('POST', '/v1/orders', body).value);
    expect(JSON.stringify(raw)).not.toContain(fingerprintRequest('POST', '/v1/orders', body).value);
    expect(raw!.subject).toBeNull();

    const same = await post('k-fp', body).expect(410);
    expect(same.body.code).toBe('response_erased');
    // Another body under the key is refused as before the erasure (protocol review 3, M2): the erasure is no
    // way round the fingerprint, and no replay of the erased answer for a body that was never sent.
    const other = await post('k-fp', orderBody({ customerId: 'cus_other' })).expect(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
  });

  it('an abandoned attempt of an erased customer is closed: 410 for its body (another gets 422), never run again with the erased id', async () => {
    gateway.failNext(1);
    await post('k-fp-restart', orderBody({ customerId: 'cus_fp2' })).expect(503);
    await t.db.collection('idempotency_records').updateOne({}, { $set: { status: 'failed', lease: null } });
    await t.db.collection('orders').updateOne({}, { $set: { state: 'failed', failureReason: 'abandoned' } });
    await erase('cus_fp2');

    const again = await post('k-fp-restart', orderBody({ customerId: 'cus_fp2' })).expect(410);
    expect(again.body.code).toBe('response_erased');
    await post('k-fp-restart', orderBody({ customerId: 'cus_other' })).expect(422);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.db.collection('orders').countDocuments({ customerId: 'cus_fp2' })).toBe(0);
    // A new key is a new request.
    await post('k-fp-new', orderBody({ customerId: 'cus_fp2' })).expect(201);
  });

  const realInterleaving =
    'an erasure paused after its reads while a claim commits needs true snapshot-isolation interleavings (the serialized emulator runs one transaction at a time)';
  // Latches, not sleeps: the claim is sent once the erasure holds its snapshot, and must not commit an order
  // naming the customer while the erasure is paused; after it, the order is pseudonymized or claimed after it.
  (onEmulator() ? it.skip : it)(
    `an order claimed while the erasure runs is pseudonymized, or claimed after it${onEmulator() ? ` (SKIPPED: ${realInterleaving})` : ''}`,
    async () => {
      const orders = t.app.get(OrderRepository);
      const pseudonymize = orders.pseudonymizeCustomer.bind(orders);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let reached!: () => void;
      const atSnapshot = new Promise<void>((resolve) => (reached = resolve));
      const spy = jest.spyOn(orders, 'pseudonymizeCustomer').mockImplementation(async (...args) => {
        const count = await pseudonymize(...args);
        reached();
        await released; // the erasure's snapshot is taken and its writes are made; a claim of the same customer comes now
        return count;
      });
      try {
        const erasure = erase('cus_race');
        await atSnapshot;
        const claim = post('k-race', orderBody({ customerId: 'cus_race' })).then((res) => res);
        // While the erasure is paused, the claim cannot commit an order that names the customer.
        for (let look = 0; look < 10; look++) {
          await sleep(30);
          expect(await t.db.collection('orders').countDocuments({ customerId: 'cus_race' })).toBe(0);
        }
        release();
        await erasure;
        expect((await claim).status).toBe(201);
        const order = await t.db.collection('orders').findOne({});
        const stripe = await t.db.collection<{ erasedAt: Date | null }>('idempotency_subjects').findOne({ erasedAt: { $ne: null } });
        // Either the erasure saw it (pseudonymized), or it was claimed after the erasure (a new request may name them).
        if (order!.customerId === 'cus_race') expect(order!.createdAt.getTime()).toBeGreaterThan(stripe!.erasedAt!.getTime());
        else expect(order!.customerId).toMatch(/^erased_/);
      } finally {
        release();
        spy.mockRestore();
      }
    },
  );
  if (onEmulator()) process.stdout.write(`SKIPPED on the emulator: "an order claimed while the erasure runs" - ${realInterleaving}\n`);
});
