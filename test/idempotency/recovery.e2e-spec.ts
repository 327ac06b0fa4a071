import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { ControllableGateway, heldLeases, ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { auth, type TestApp } from '../support/test-app.js';

const LEASE_MS = 1000;
// Long enough that no test crosses it by waiting: the tests end it by moving the record's time.
const RESUME_WINDOW_MS = 600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('recovery: reaper and lease fencing', () => {
  let app: ControlledApp;
  let t: TestApp;
  let gateway: ControllableGateway;
  let reaper: IdempotencyReaper;
  let faults: ThrowingFaultInjector;

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_recovery',
      env: { IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), IDEMPOTENCY_RESUME_WINDOW_MS: String(RESUME_WINDOW_MS) },
    });
    ({ t, gateway, reaper, faults } = app);
  });
  beforeEach(async () => app.reset());
  afterAll(async () => t.close());

  const post = (key: string) => app.post(key);
  const expireLeases = () => app.expireLeases();
  /** As if the resume window of every released record had passed without a retry. */
  const endResumeWindows = () =>
    t.db
      .collection('idempotency_records')
      .updateMany(
        { status: 'pending', 'lease.resumableUntil': { $ne: null } },
        { $set: { 'lease.resumableUntil': new Date(Date.now() - 1) } },
      );

  it('completes a stale attempt the provider charged: order saved, replayed to the client later', async () => {
    gateway.crashAfterNextCharge();
    await post('k-reap-charged').expect(500);
    // Dead, not failed: no release ran, the lease runs its full term (the reaper takes it once it expires).
    expect(faults.releasesSkipped).toBe(1);
    expect(await heldLeases(t.db, LEASE_MS)).toBe(1);
    await expireLeases();
    const run = await reaper.runOnce();
    expect(run).toMatchObject({ examined: 1, completed: 1, abandoned: 0 });
    const order = await t.db.collection('orders').findOne({});
    expect(order).toMatchObject({ state: 'saved' });
    const replay = await post('k-reap-charged').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(order!._id);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [order!._id as unknown as string], requireSettled: true })).toEqual([]);
  });

  it('leaves an attempt released after a 503 to its client inside the resume window, then abandons it (no charge): order failed, record failed without response, key canceled', async () => {
    gateway.failNext(1);
    await post('k-reap-nothing').expect(503);
    const released = await t.db.collection('idempotency_records').findOne({});
    expect(released!.lease.expiresAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(released!.lease.resumableUntil.getTime()).toBeGreaterThan(Date.now() + RESUME_WINDOW_MS - 60_000);
    // Inside the window: the lease is free for the client's retry, but the reaper does not take it.
    expect(await reaper.runOnce()).toMatchObject({ examined: 0, abandoned: 0 });
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'pending' });
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'pending', attempt: 1 });

    await endResumeWindows();
    const run = await reaper.runOnce();
    expect(run).toMatchObject({ examined: 1, completed: 0, abandoned: 1 });
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'failed', response: null });
    expect(await t.simulatorDb.collection('charges').findOne({})).toMatchObject({ status: 'canceled' });

    // A later retry with the same key is a new attempt with a new order.
    const retry = await post('k-reap-nothing').expect(201);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 2 });
    expect(await t.db.collection('orders').countDocuments()).toBe(2);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [retry.body.id], requireSettled: true })).toEqual([]);
  });

  it('finishes a charged order whose save phase never ran (crash after T1)', async () => {
    faults.crashOnceAt('after-charged');
    await post('k-reap-t1').expect(500);
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'charged' });
    expect(faults.releasesSkipped).toBe(1);
    expect(await heldLeases(t.db, LEASE_MS)).toBe(1);
    await expireLeases();
    expect((await reaper.runOnce()).completed).toBe(1);
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'saved' });
    expect(gateway.calls).toBe(1);
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
  });

  it('phases driven one by one: a retry after each crash point finishes the order without a second charge', async () => {
    for (const point of ['after-claim', 'after-charge', 'after-charged', 'before-response'] as const) {
      await t.reset();
      gateway.reset();
      faults.reset();
      faults.crashOnceAt(point);
      await post(`k-phase-${point}`).expect(500);
      // Before the response the work is done and there is no lease left; at every other point the dead worker's stays held.
      expect(faults.releasesSkipped).toBe(point === 'before-response' ? 0 : 1);
      expect(await heldLeases(t.db, LEASE_MS)).toBe(point === 'before-response' ? 0 : 1);
      await expireLeases();
      const retry = await post(`k-phase-${point}`).expect(201);
      expect(retry.headers['idempotent-replayed']).toBe(point === 'before-response' ? 'true' : undefined);
      expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(1);
      expect(await findViolations({ ...t, acknowledgedOrderIds: [retry.body.id], requireSettled: true })).toEqual([]);
    }
  });

  it('leaves a live lease alone, while the attempt runs and once it finished', async () => {
    const hold = gateway.holdNextCharge('before');
    const first = post('k-live').then((r) => r);
    await hold.reached;
    expect((await reaper.runOnce()).examined).toBe(0);
    hold.release();
    expect((await first).status).toBe(201);
    expect((await reaper.runOnce()).examined).toBe(0);
  });

  it("fencing: a worker paused past its lease after charging commits nothing; the client gets the reaper's result", async () => {
    const hold = gateway.holdNextCharge('after');
    const paused = post('k-fence-after').then((r) => r);
    await hold.reached;
    await sleep(LEASE_MS + 50);
    expect((await reaper.runOnce()).completed).toBe(1);
    const journalsBefore = await t.db.collection('ledger_entries').countDocuments();

    hold.release();
    const res = await paused;
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBe('true');
    expect(await t.db.collection('ledger_entries').countDocuments()).toBe(journalsBefore);
    expect(await t.db.collection('payments').countDocuments()).toBe(1);
    expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [res.body.id], requireSettled: true })).toEqual([]);
  });

  it('fencing: a worker paused before charging cannot charge a key the reaper canceled', async () => {
    const hold = gateway.holdNextCharge('before');
    const paused = post('k-fence-before').then((r) => r);
    await hold.reached;
    await sleep(LEASE_MS + 50);
    expect((await reaper.runOnce()).abandoned).toBe(1);
    const abandoned = await t.db.collection('orders').findOne({});

    hold.release();
    const res = await paused;
    // The paused request found its attempt abandoned and ran the next attempt: one charge, on the new order.
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe(abandoned!._id);
    expect(await t.db.collection('orders').findOne({ _id: abandoned!._id })).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
    expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [res.body.id], requireSettled: true })).toEqual([]);
  });

  it('fencing: a worker whose attempt was abandoned and restarted changes nothing of the new attempt', async () => {
    // Worker A holds attempt 1 before its charge; the reaper abandons it; worker B restarts the key as attempt 2.
    const holdA = gateway.holdNextCharge('before');
    const workerA = post('k-fence-restart').then((r) => r);
    await holdA.reached;
    await expireLeases();
    expect((await reaper.runOnce()).abandoned).toBe(1);
    const holdB = gateway.holdNextCharge('before');
    const workerB = post('k-fence-restart').then((r) => r);
    await holdB.reached;
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'pending', attempt: 2 });

    // A wakes up: its charge key was cancelled, and every write it tries is fenced by attempt 2's owner.
    holdA.release();
    holdB.release();
    const [a, b] = await Promise.all([workerA, workerB]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).toBe(b.body.id);
    const orders = await t.db.collection('orders').find({}).sort({ 'idempotency.attempt': 1 }).toArray();
    expect(orders).toMatchObject([
      { state: 'failed', failureReason: 'abandoned', idempotency: { attempt: 1 } },
      { _id: b.body.id, state: 'saved', idempotency: { attempt: 2 } },
    ]);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 2 });
    expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [b.body.id], requireSettled: true })).toEqual([]);
  });

  it('still reaps a dead worker (lease expired, never released) at once: no resume window for it', async () => {
    const hold = gateway.holdNextCharge('before');
    const paused = post('k-dead').then((r) => r);
    await hold.reached;
    await expireLeases();
    expect((await t.db.collection('idempotency_records').findOne({}))!.lease.resumableUntil ?? null).toBeNull();
    expect(await reaper.runOnce()).toMatchObject({ examined: 1, abandoned: 1 });
    hold.release();
    expect((await paused).status).toBe(201);
  });

  it('an outage of 3 retries then success: one order for the key (in GET /v1/orders too), one charge on its charge key, invariants clean', async () => {
    gateway.failNext(3);
    const first = await post('k-outage').expect(503);
    expect(Number(first.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const order = await t.db.collection('orders').findOne({});
    for (let retry = 0; retry < 2; retry++) {
      await post('k-outage').expect(503);
      // A reaper pass between retries (as in production, every REAPER_INTERVAL_MS) must not abandon it.
      expect((await reaper.runOnce()).examined).toBe(0);
    }
    const done = await post('k-outage').expect(201);
    expect(done.body.id).toBe(order!._id);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', attempt: 1 });
    const listed = await t.http().get('/v1/orders').set(auth()).expect(200);
    expect(listed.body.data.map((o: { id: string }) => o.id)).toEqual([order!._id]);
    const charges = await t.simulatorDb.collection('charges').find({}).toArray();
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ status: 'succeeded' });
    expect(gateway.calls).toBe(4);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [done.body.id], requireSettled: true })).toEqual([]);
  });

  it('counts reaper runs and decisions in metrics', async () => {
    // Deltas of this test's own pass: earlier tests already counted runs and abandonments.
    const read = async (series: string) => {
      const text = (await t.http().get('/metrics').expect(200)).text;
      const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
      return line ? Number(line.slice(series.length + 1)) : 0;
    };
    const runs = await read('reaper_runs_total');
    const abandoned = await read('reaper_records_total{decision="abandoned"}');
    gateway.failNext(1);
    await post('k-metrics').expect(503);
    await endResumeWindows();
    await reaper.runOnce();
    expect(await read('reaper_runs_total')).toBe(runs + 1);
    expect(await read('reaper_records_total{decision="abandoned"}')).toBe(abandoned + 1);
    expect((await t.http().get('/metrics').expect(200)).text).toMatch(/^idempotency_oldest_pending_age_seconds 0$/m);
  });
});
