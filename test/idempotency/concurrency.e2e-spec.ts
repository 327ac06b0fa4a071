import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { IdempotencyReaper, type ReaperRun } from '@idempotent-orders/nest-idempotency';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway, heldLeases, withCrashStandIn, type ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const LEASE_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Instance {
  t: TestApp;
  gateway: ControllableGateway;
  reaper: IdempotencyReaper;
  faults: ThrowingFaultInjector;
}

/**
 * Paths where several instances meet on one key, one record or one charge
 * key, sent at once over one store (on the emulator, through the serializing
 * proxy, so their transactions are admitted one at a time; with
 * EMULATOR_WRITE_CONFLICT_RATE, with write conflicts too). Each test shows
 * that the parties it races all reached the contested step (counts, not
 * sleeps), requires exactly one outcome per key, and ends on the invariant
 * checker. Crashes are the stand-in's: the dead worker's lease stays held.
 */
describe('concurrency between instances', () => {
  const instances: Instance[] = [];
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const t = await startApp({
        dbName: 'test_concurrency',
        keepData: i > 0,
        env: { IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0' },
        override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
      });
      const gateway = t.app.get(PaymentGateway) as ControllableGateway;
      instances.push({ t, gateway, reaper: t.app.get(IdempotencyReaper), faults: withCrashStandIn(t.app, gateway) });
    }
    [a, b] = instances;
  });
  beforeEach(async () => {
    await a.t.reset();
    for (const instance of instances) {
      instance.gateway.reset();
      instance.faults.reset();
    }
  });
  afterAll(async () => {
    for (const instance of instances) await instance.t.close();
  });

  const post = (instance: Instance, key: string) =>
    instance.t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody());
  const expireLeases = () =>
    a.t.db.collection('idempotency_records').updateMany({ status: 'pending' }, { $set: { 'lease.expiresAt': new Date(Date.now() - 1) } });
  const total = (runs: ReaperRun[], decision: keyof ReaperRun) => runs.reduce((sum, run) => sum + run[decision], 0);
  const succeededCharges = () => a.t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' });
  const violations = (acknowledgedOrderIds: string[] = []) =>
    findViolations({ db: a.t.db, simulatorDb: a.t.simulatorDb, acknowledgedOrderIds, requireSettled: true });

  it('three reapers on one stale charged record: one completes it, the others lose the lease or find nothing', async () => {
    a.gateway.crashAfterNextCharge();
    await post(a, 'k-three-reapers').expect(500);
    expect(await heldLeases(a.t.db, LEASE_MS)).toBe(1);
    await expireLeases();

    const runs = await Promise.all(instances.map((instance) => instance.reaper.runOnce()));
    expect(total(runs, 'completed')).toBe(1);
    // All three scanned it or lost it: one reconciliation reached the provider, the others found it taken.
    expect(total(runs, 'completed') + total(runs, 'lost_lease') + runs.filter((run) => run.examined === 0).length).toBe(3);
    expect(total(runs, 'error')).toBe(0);
    expect(await a.t.db.collection('orders').find({}).toArray()).toMatchObject([{ state: 'saved' }]);
    expect(await succeededCharges()).toBe(1);
    expect(await violations()).toEqual([]);
  });

  it('three reapers on one stale attempt with no charge: abandoned once, its charge key canceled once', async () => {
    a.gateway.failNext(1);
    await post(a, 'k-three-abandon').expect(503);
    // The 503 left the attempt to its client's retry for the resume window; nobody retried and it has passed.
    await a.t.db
      .collection('idempotency_records')
      .updateMany({ status: 'pending' }, { $set: { 'lease.resumableUntil': new Date(Date.now() - 1) } });
    await expireLeases();

    const runs = await Promise.all(instances.map((instance) => instance.reaper.runOnce()));
    expect(total(runs, 'abandoned')).toBe(1);
    expect(total(runs, 'error')).toBe(0);
    expect(await a.t.db.collection('orders').find({}).toArray()).toMatchObject([{ state: 'failed', failureReason: 'abandoned' }]);
    expect(await a.t.simulatorDb.collection('charges').find({}).toArray()).toMatchObject([{ status: 'canceled' }]);
    expect(await violations()).toEqual([]);
  });

  it("a retry's takeover racing the reaper on a stale charged record: one order saved, one charge, one answer", async () => {
    for (let round = 0; round < 4; round++) {
      const key = `k-retry-vs-reaper-${round}`;
      a.gateway.crashAfterNextCharge();
      await post(a, key).expect(500);
      expect(await heldLeases(a.t.db, LEASE_MS)).toBe(1);
      await expireLeases();

      // The offsets vary who gets there first; whoever does, exactly one of them finishes the attempt.
      const [retry, run] = await Promise.all([post(a, key), sleep(round * 3).then(() => b.reaper.runOnce())]);
      expect([201, 409]).toContain(retry.status);
      expect(run.error).toBe(0);
      const retryFinishedIt = retry.status === 201 && retry.headers['idempotent-replayed'] === undefined;
      expect(Number(retryFinishedIt) + run.completed).toBe(1);
      const again = retry.status === 201 ? retry : await post(a, key).expect(201);
      const orders = await a.t.db
        .collection('orders')
        .find({ 'idempotency.recordId': { $regex: `:${key}$` } })
        .toArray();
      expect(orders).toMatchObject([{ _id: again.body.id, state: 'saved' }]);
    }
    expect(await succeededCharges()).toBe(4);
    expect(await violations()).toEqual([]);
  });

  it("a worker's late charge racing the reaper's cancel of the same charge key: never a charge without its order", async () => {
    const acknowledged: string[] = [];
    for (let round = 0; round < 4; round++) {
      const key = `k-charge-vs-cancel-${round}`;
      const hold = a.gateway.holdNextCharge('before');
      const paused = post(a, key).then((res) => res);
      await hold.reached;
      await sleep(LEASE_MS + 50);

      // The worker calls the provider with its charge key while the reaper cancels that key.
      const reconcilesBefore = b.gateway.reconciles;
      const reaped = b.reaper.runOnce();
      await sleep(round * 2);
      hold.release();
      const [res, run] = await Promise.all([paused, reaped]);
      expect(run.error).toBe(0);
      // The worker reached the provider; the reaper either did too (charge or cancel first, whichever won) or
      // found the attempt already moved on - not listed at all, or listed and its takeover lost to the worker's
      // checkpoint: never neither, never twice.
      expect(a.gateway.calls).toBeGreaterThanOrEqual(round + 1);
      const reconciled = b.gateway.reconciles - reconcilesBefore;
      const reaperTookIt = run.examined - run.lost_lease > 0;
      expect(reconciled).toBeLessThanOrEqual(1);
      if (reaperTookIt) expect(reconciled).toBe(1);
      if (!reaperTookIt) expect(res.headers['idempotent-replayed']).toBeUndefined();
      // One outcome: the charge won (the reaper saves it, the worker gets it replayed) or the cancel did (the
      // worker's attempt is abandoned and it runs the next one) - or the reaper still held the key (409).
      expect([201, 409]).toContain(res.status);
      if (res.status === 201) acknowledged.push(res.body.id);
    }
    await expireLeases();
    for (const instance of instances) await instance.reaper.runOnce();
    expect(await violations(acknowledged)).toEqual([]);
  });
});
