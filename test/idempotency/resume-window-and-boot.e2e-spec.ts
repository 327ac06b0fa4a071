// The third protocol review (issue 21, ../shared/reviews/protocol-review-3.md):
// each interleaving it found, driven over real HTTP on the run's replica set,
// with the database state asserted. Tombstones after an erasure (H1) live in
// tombstones.e2e-spec.ts, non-I-JSON bodies (M1) in hostile-requests.e2e-spec.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Clock } from '../../src/common/clock.js';
import { startClockReportingProxy, type ClockReportingProxy } from '../support/clock-reporting-proxy.js';
import { findViolations } from '../support/invariants.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { ServiceNameChangedError } from '@idempotent-orders/nest-idempotency';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const RESUME_WINDOW_MS = 600_000;

describe('protocol review 3', () => {
  let app: ControlledApp;
  let t: TestApp;

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_protocol_review_3',
      env: { IDEMPOTENCY_RESUME_WINDOW_MS: String(RESUME_WINDOW_MS), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0' },
    });
    t = app.t;
  });
  beforeEach(async () => app.reset());
  afterAll(async () => t.close());

  const post = (key: string, body = orderBody()) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);
  const counts = async () => ({
    orders: await t.db.collection('orders').countDocuments(),
    charges: await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' }),
  });

  it('M2: a record erased in flight is resumed only by the same request; another body gets 422 and charges nothing', async () => {
    const hold = app.gateway.holdNextCharge('before');
    const first = post('k-m2', orderBody({ customerId: 'cus_c' })).then((r) => r);
    await hold.reached;
    await t.http().delete('/v1/customers/cus_c/data').set(auth()).expect(200);
    // The worker stalls past its lease, as a crashed one would.
    await app.expireLeases();
    const other = await post('k-m2', orderBody({ customerId: 'cus_d', items: [{ sku: 'x', quantity: 9, unitPriceMinor: 1100 }] }));
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 422, code: 'idempotency_key_reused' });
    expect(app.gateway.calls).toBe(1);
    hold.release();
    const done = await first;
    expect(done.status).toBe(201);
    expect(done.body.customerId).toMatch(/^erased_/);
    const again = await post('k-m2', orderBody({ customerId: 'cus_c' })).expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await counts()).toEqual({ orders: 1, charges: 1 });
    expect(await t.db.collection('orders').countDocuments({ customerId: { $in: ['cus_c', 'cus_d'] } })).toBe(0);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [done.body.id], requireSettled: true })).toEqual([]);
  });

  it('L1: a record released into its resume window after the reaper listed it is left to its client', async () => {
    app.gateway.failNext(1);
    const hold = app.gateway.holdNextCharge('before');
    const first = post('k-l1').then((r) => r);
    await hold.reached;
    // The provider is slow past the lease: the reaper's pass lists the record...
    await app.expireLeases();
    const listed = await t.db.collection('idempotency_records').findOne({});
    // ...then the provider answers 503 and the worker releases it into its resume window.
    hold.release();
    expect((await first).status).toBe(503);
    const released = await t.db.collection('idempotency_records').findOne({});
    expect(released!.lease.resumableUntil.getTime()).toBeGreaterThan(Date.now());
    // The reaper's takeover of what it listed now loses: the window is the client's.
    const decision = await app.reaper.reap(listed as never, { honourResumeWindow: true });
    expect(decision).toBe('lost_lease');
    const order = await t.db.collection('orders').findOne({});
    expect(order).toMatchObject({ state: 'pending' });
    // The client's retry resumes the same order with the same charge key: attempt 1, one charge.
    const retry = await post('k-l1').expect(201);
    expect(retry.body.id).toBe(order!._id);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 1 });
    expect(await counts()).toEqual({ orders: 1, charges: 1 });
  });

  it('L2: the reaper scan and the oldest-pending gauge have indexes: a record inside its resume window is not scanned', async () => {
    const indexes = await t.db.collection('idempotency_records').indexes();
    expect(indexes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'reaper_window_scan', key: { status: 1, 'lease.resumableUntil': 1, 'lease.expiresAt': 1 } }),
        expect.objectContaining({ name: 'pending_age', key: { status: 1, createdAt: 1 } }),
      ]),
    );
    app.gateway.failNext(1);
    await post('k-l2').expect(503);
    const now = new Date();
    const stale = { status: 'pending', 'lease.expiresAt': { $lte: now } };
    const inWindow = await t.db.collection('idempotency_records').countDocuments({ ...stale, 'lease.resumableUntil': { $gt: now } });
    expect(inWindow).toBe(1);
    // Where the server explains, each branch of the reaper's filter is an index range over reaper_window_scan.
    const explained = await t.db
      .collection('idempotency_records')
      .find({ ...stale, $or: [{ 'lease.resumableUntil': null }, { 'lease.resumableUntil': { $lte: now } }] })
      .explain('executionStats')
      .catch(() => null);
    if (explained?.executionStats) expect(explained.executionStats.totalDocsExamined).toBe(0);
    else console.log('NOTE: this backend does not explain queries; the index shape above is what is checked');
  });

  it('L6: every collection exists after boot, before any request, and the stripes carry an expiry', async () => {
    const names = (
      await t.db
        .listCollections({}, { nameOnly: true })
        .toArray()
        .catch(() => null)
    )?.map((c) => c.name);
    const expected = [
      'idempotency_records',
      'idempotency_tombstones',
      'idempotency_subjects',
      'orders',
      'payments',
      'ledger_entries',
      'outbox_events',
      'erasures',
    ];
    if (names) expect(names).toEqual(expect.arrayContaining(expected));
    else console.log('NOTE: this backend has no listCollections; only the indexes built at boot are checked here');
    const indexes = await t.db.collection('idempotency_subjects').indexes();
    expect(indexes).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'subject_ttl', expireAfterSeconds: 0 })]));
    const erasureIndexes = await t.db.collection('erasures').indexes();
    expect(erasureIndexes).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'erasure_ttl' })]));
  });
});

describe('protocol review 3, M4: through mongos', () => {
  let t: TestApp;
  const proxies: ClockReportingProxy[] = [];
  const AHEAD_MS = 90_000;

  beforeAll(async () => {
    // Two routers of one "cluster" whose hosts' clocks are 90 s apart.
    proxies.push(await startClockReportingProxy(process.env.MONGODB_URI!, { mongos: true, offsetMs: 0 }));
    proxies.push(await startClockReportingProxy(process.env.MONGODB_URI!, { mongos: true, offsetMs: AHEAD_MS }));
    const [first, second] = proxies.map((proxy) => /^mongodb:\/\/([^/]+)/.exec(proxy.uri)![1]);
    const uri = proxies[0].uri.replace(first, `${first},${second}`);
    t = (await startControlledApp({ dbName: 'test_protocol_review_3_mongos', env: { MONGODB_URI: `${uri}&heartbeatFrequencyMS=500` } })).t;
  });
  afterAll(async () => {
    await t?.close();
    for (const proxy of proxies) await proxy.close();
  });

  it('boots, serves a create and a replay, and keeps one clock instead of jumping between the routers', async () => {
    const hello = await t.db.admin().command({ hello: 1 });
    expect(hello.msg).toBe('isdbgrid');
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-mongos').send(orderBody()).expect(201);
    const replay = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-mongos').send(orderBody()).expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(created.body.id);
    const clock = t.app.get(Clock);
    const offsets: number[] = [];
    // Several heartbeats of each router (every 500 ms): the offset must stay with one of them.
    for (let i = 0; i < 12; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      offsets.push(clock.now().getTime() - Date.now());
    }
    const spread = Math.max(...offsets) - Math.min(...offsets);
    expect(spread).toBeLessThan(AHEAD_MS / 2);
  });
});

describe('protocol review 3, L9: SERVICE_NAME cannot silently change the ids of live keys', () => {
  it('refuses to boot under another SERVICE_NAME over a database another name wrote', async () => {
    const first = await startApp({ dbName: 'test_protocol_review_3_rename' });
    await first.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-live').send(orderBody()).expect(201);
    await first.close();
    await expect(
      startApp({ dbName: 'test_protocol_review_3_rename', keepData: true, env: { SERVICE_NAME: 'renamed-service' } }),
    ).rejects.toThrow(ServiceNameChangedError);
    // The same name boots again over the same data, and the live key still replays.
    const again = await startApp({ dbName: 'test_protocol_review_3_rename', keepData: true });
    const replay = await again.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-live').send(orderBody()).expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await again.close();
  });
});
