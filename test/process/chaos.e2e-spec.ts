// The crash matrix with real processes: the built service SIGKILLs itself at
// each fault point (FAULT_INJECTION=true FAULT_CRASH_AT=<point>), is started
// again without the fault, and the work must end exactly once - finished by the
// client's retry, or by the reaper with no retry at all. Plus the lost
// response: the work is done, the answer never arrives, the retry gets it.
// (test/idempotency/recovery.e2e-spec.ts drives the same paths in-process.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import { findViolations } from '../support/invariants.js';
import {
  connectMongo,
  databasesOf,
  emptyDatabases,
  httpRequest,
  killAllServices,
  ordersForKey,
  pollUntil,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
  succeededCharges,
  type Databases,
  type HttpResponse,
  type ServiceProcess,
} from '../support/service-process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

type CrashPoint = 'after-claim' | 'after-charge' | 'after-charged' | 'before-response';

/** What the database holds the instant the process dies at each point. */
const AT_CRASH: Record<CrashPoint, { orderState: string; charged: boolean }> = {
  'after-claim': { orderState: 'pending', charged: false },
  'after-charge': { orderState: 'pending', charged: true },
  'after-charged': { orderState: 'charged', charged: true },
  'before-response': { orderState: 'saved', charged: true },
};
const POINTS = Object.keys(AT_CRASH) as CrashPoint[];

const LEASE_MS = 1000;
/** Longer than a restart takes here: the retry meets the dead worker's lease still live. */
const LIVE_LEASE_MS = 8000;
const SETTLE_DEADLINE_MS = 10_000;
const SCENARIO_TIMEOUT_MS = 40_000;
/** SIGKILL drops the connection: the kernel closes the socket with no HTTP response. */
const DROPPED = /socket hang up|ECONNRESET|EPIPE/;

describe('chaos: real processes killed mid-request', () => {
  let mongo: MongoClient;
  let current: Databases | null = null;

  beforeAll(async () => {
    mongo = await connectMongo();
  });
  afterEach(async () => {
    await killAllServices();
    if (current) await emptyDatabases(current);
    current = null;
  });
  afterAll(async () => {
    await killAllServices();
    await mongo?.close();
  });

  const dbsFor = (service: Pick<ServiceProcess, 'dbName' | 'simulatorDbName'>) => (current = databasesOf(mongo, service));

  /**
   * Starts the service with the crash point, sends one POST: the connection
   * drops and the process is gone by SIGKILL. Returns the order as it was left.
   */
  async function crashAt(point: CrashPoint, dbName: string, key: string, leaseMs = LEASE_MS) {
    const service = await startService({
      dbName,
      label: `crash@${point}`,
      env: { FAULT_INJECTION: 'true', FAULT_CRASH_AT: point, REAPER_ENABLED: 'false', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(leaseMs) },
    });
    const dbs = dbsFor(service);
    await expect(postOrder(service.baseUrl, key)).rejects.toThrow(DROPPED);
    const exit = await service.waitForExit(10_000);
    // Killed by its own SIGKILL (its warn log line may not get flushed first, so the state below is the proof of where).
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });

    const orders = await ordersForKey(dbs.db, key);
    expect(orders.map((order) => order.state)).toEqual([AT_CRASH[point].orderState]);
    expect(await succeededCharges(dbs.simulatorDb)).toBe(AT_CRASH[point].charged ? 1 : 0);
    return { service, dbs, orderId: orders[0]._id as string };
  }

  /** POSTs until the answer is not 409 (the dead worker's lease still live), honouring Retry-After. */
  async function retryPastLiveLease(
    baseUrl: string,
    key: string,
    deadlineMs = SETTLE_DEADLINE_MS,
  ): Promise<{ res: HttpResponse; conflicts: number; sent: { at: number; status: number }[] }> {
    const deadline = Date.now() + deadlineMs;
    let conflicts = 0;
    const sent: { at: number; status: number }[] = [];
    for (;;) {
      const at = Date.now();
      const res = await postOrder(baseUrl, key);
      sent.push({ at, status: res.status });
      if (res.status !== 409 || Date.now() >= deadline) return { res, conflicts, sent };
      conflicts++;
      expect(res.json?.code).toBe('idempotency_key_in_use');
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      await sleep(Math.min(retryAfter * 1000, LEASE_MS + 100));
    }
  }

  const metricValue = (text: string, series: string) => {
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };

  describe.each(POINTS)('crash at %s', (point) => {
    const charged = AT_CRASH[point].charged;

    it(
      "retry after restart (reaper off): the dead worker's lease is honoured (409 + Retry-After) until it expires, then 201 with the original order, at most one charge",
      async () => {
        const key = `chaos-retry-${point}`;
        const { dbs, orderId } = await crashAt(point, scenarioDbName(`chaos_retry_${point}`), key, LIVE_LEASE_MS);
        const lease = (await dbs.db.collection('idempotency_records').findOne({ clientKey: key }))!.lease as { expiresAt: Date } | null;

        const restarted = await startService({
          dbName: dbs.db.databaseName,
          simulatorDbName: dbs.simulatorDb.databaseName,
          label: `restart-retry@${point}`,
          env: { REAPER_ENABLED: 'false', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LIVE_LEASE_MS), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0' },
        });
        const { res, sent } = await retryPastLiveLease(restarted.baseUrl, key, LIVE_LEASE_MS + SETTLE_DEADLINE_MS);
        if (point === 'before-response') {
          // The work was done before the kill: no lease left, the first retry is the replay.
          expect(lease).toBeNull();
          expect(sent).toHaveLength(1);
        } else {
          // A SIGKILL gives nothing back: every retry sent while the lease lived was refused, and at least one was.
          const early = sent.filter((attempt) => attempt.at < lease!.expiresAt.getTime() - 100);
          expect(early.length).toBeGreaterThanOrEqual(1);
          expect(early.map((attempt) => attempt.status)).toEqual(early.map(() => 409));
        }

        expect({ status: res.status, body: res.json }).toMatchObject({ status: 201, body: { id: orderId, state: 'saved' } });
        // Only a crash after the response was stored makes this a replay; otherwise the retry finished the work itself.
        expect(res.headers['idempotent-replayed']).toBe(point === 'before-response' ? 'true' : undefined);
        const orders = await ordersForKey(dbs.db, key);
        expect(orders.map((order) => [order._id, order.state])).toEqual([[orderId, 'saved']]);
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await dbs.db.collection('payments').countDocuments({ orderId })).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [orderId] })).toEqual([]);
      },
      SCENARIO_TIMEOUT_MS,
    );

    it(
      `reaper after restart, no retry: the order ends ${charged ? 'saved (the provider charged)' : 'failed/abandoned (nothing charged)'}`,
      async () => {
        const key = `chaos-reap-${point}`;
        const { dbs, orderId } = await crashAt(point, scenarioDbName(`chaos_reap_${point}`), key);

        const restarted = await startService({
          dbName: dbs.db.databaseName,
          simulatorDbName: dbs.simulatorDb.databaseName,
          label: `restart-reaper@${point}`,
          env: { REAPER_ENABLED: 'true', REAPER_INTERVAL_MS: '300', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS) },
        });
        await pollUntil(
          async () =>
            (await dbs.db.collection('idempotency_records').countDocuments({ status: 'pending' })) === 0 &&
            (await dbs.db.collection('orders').countDocuments({ state: { $in: ['pending', 'charged'] } })) === 0,
          SETTLE_DEADLINE_MS,
          async () =>
            `still pending after ${SETTLE_DEADLINE_MS} ms: ${JSON.stringify(await ordersForKey(dbs.db, key))}\n${restarted.describe()}`,
        );

        const orders = await ordersForKey(dbs.db, key);
        const record = await dbs.db.collection('idempotency_records').findOne({});
        if (charged) {
          expect(orders.map((order) => [order._id, order.state])).toEqual([[orderId, 'saved']]);
          expect(record).toMatchObject({ status: 'complete' });
          expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        } else {
          expect(orders.map((order) => [order._id, order.state, order.failureReason])).toEqual([[orderId, 'failed', 'abandoned']]);
          expect(record).toMatchObject({ status: 'failed', response: null });
          expect(await succeededCharges(dbs.simulatorDb)).toBe(0);
          // The charge key is canceled at the provider: the dead attempt can never charge later.
          expect(await dbs.simulatorDb.collection('charges').countDocuments({ status: 'canceled' })).toBe(1);
        }
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [] })).toEqual([]);

        // It was the reaper (no request was sent): its counters say what it decided.
        const metrics = (await httpRequest(restarted.baseUrl, { method: 'GET', path: '/metrics' })).text;
        const decision = (name: string) => metricValue(metrics, `reaper_records_total{decision="${name}"}`);
        if (point === 'before-response') {
          expect([decision('completed'), decision('abandoned')]).toEqual([0, 0]);
        } else {
          expect([decision('completed'), decision('abandoned')]).toEqual(charged ? [1, 0] : [0, 1]);
        }

        // A client coming back later: the saved order is replayed; an abandoned attempt is retried as a new one.
        const later = await postOrder(restarted.baseUrl, key);
        expect(later.status).toBe(201);
        if (charged) {
          expect(later.headers['idempotent-replayed']).toBe('true');
          expect(later.json.id).toBe(orderId);
        } else {
          expect(later.json.id).not.toBe(orderId);
          expect((await ordersForKey(dbs.db, key)).map((order) => order.state).sort()).toEqual(['failed', 'saved']);
        }
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [later.json.id] })).toEqual([]);
      },
      SCENARIO_TIMEOUT_MS,
    );
  });

  describe('lost response', () => {
    let proxy: TcpProxy | undefined;
    afterEach(async () => {
      await proxy?.close();
      proxy = undefined;
    });

    it(
      'the answer is cut on the way back: the retry gets the stored 201 (replayed, same order), one order, one charge',
      async () => {
        const service = await startService({ dbName: scenarioDbName('chaos_lost'), label: 'lost-response' });
        const dbs = dbsFor(service);
        proxy = await startTcpProxy({ port: service.port });
        const key = 'chaos-lost-response';

        const dropped = proxy.dropNextResponse();
        await expect(postOrder(proxy.baseUrl, key)).rejects.toThrow(DROPPED);
        await dropped;
        expect(proxy.dropped).toBe(1);

        // The server finished before it answered: the work is stored, complete.
        const [order] = await ordersForKey(dbs.db, key);
        expect(order).toMatchObject({ state: 'saved' });
        expect(await dbs.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete' });

        const retry = await postOrder(proxy.baseUrl, key);
        expect(retry.status).toBe(201);
        expect(retry.headers['idempotent-replayed']).toBe('true');
        expect(retry.json).toMatchObject({ id: order._id, state: 'saved' });
        expect(proxy.connections).toBe(2);

        expect(await ordersForKey(dbs.db, key)).toHaveLength(1);
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [order._id] })).toEqual([]);
      },
      SCENARIO_TIMEOUT_MS,
    );
  });
});
