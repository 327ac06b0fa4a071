// The foundation, checked on the real process (node dist/src/main.js): boot-time
// configuration errors, health on the run's replica set, graceful shutdown on
// SIGTERM with a request in flight, and two instances sharing one database.
import { IdempotencyRecordSchema } from '@idempotent-orders/nest-idempotency/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
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
  spawnService,
  startService,
  succeededCharges,
  type Databases,
  type ServiceProcess,
} from '../support/service-process.js';

const STACK_LINE = /^ {4}at /m;
const TIMEOUT_MS = 30_000;

const refused = (baseUrl: string) =>
  httpRequest(baseUrl, { method: 'GET', path: '/health/live', timeoutMs: 1_000 }).then(
    () => false,
    (error: NodeJS.ErrnoException) => error.code === 'ECONNREFUSED',
  );

describe('the service as a real process', () => {
  let mongo: MongoClient;
  const used: Databases[] = [];

  beforeAll(async () => {
    mongo = await connectMongo();
  });
  afterAll(async () => {
    await killAllServices();
    for (const dbs of used) await emptyDatabases(dbs);
    await mongo?.close();
  });

  const dbsFor = (service: Pick<ServiceProcess, 'dbName' | 'simulatorDbName'>) => {
    const dbs = databasesOf(mongo, service);
    used.push(dbs);
    return dbs;
  };

  describe('one instance', () => {
    afterEach(async () => {
      await killAllServices();
    });

    describe('configuration errors stop the boot', () => {
      it('a bad PORT exits 1 naming PORT, without a stack trace', async () => {
        const service = await spawnService({ env: { PORT: 'abc' }, label: 'bad-port' });
        const exit = await service.waitForExit(15_000);
        expect(exit).toEqual({ code: 1, signal: null });
        expect(service.stderr()).toMatch(/^Invalid configuration:/);
        expect(service.stderr()).toMatch(/PORT: .*\(got "abc"\)/);
        expect(service.stderr() + service.stdout()).not.toMatch(STACK_LINE);
      });

      it('production without MONGODB_URI, API_KEYS and IDEMPOTENCY_ENCRYPTION_KEY exits 1 naming each', async () => {
        const service = await spawnService({
          env: { NODE_ENV: 'production', MONGODB_URI: undefined, API_KEYS: undefined, IDEMPOTENCY_ENCRYPTION_KEY: undefined },
          label: 'production-missing',
        });
        const exit = await service.waitForExit(15_000);
        expect(exit).toEqual({ code: 1, signal: null });
        const stderr = service.stderr();
        for (const name of ['MONGODB_URI', 'API_KEYS', 'IDEMPOTENCY_ENCRYPTION_KEY']) {
          expect(stderr).toMatch(new RegExp(`^  - ${name}: required when NODE_ENV=production`, 'm'));
        }
        expect(stderr + service.stdout()).not.toMatch(STACK_LINE);
        // It stopped at the configuration: no embedded database was started, nothing listened.
        expect(service.stdout()).not.toMatch(/embedded|Listening/);
      });
    });

    it(
      'on the given MONGODB_URI: GET /health/ready and /health/live answer 200',
      async () => {
        const service = await startService({ dbName: scenarioDbName('proc_health'), label: 'health' });
        dbsFor(service);
        const ready = await httpRequest(service.baseUrl, { method: 'GET', path: '/health/ready' });
        expect({ status: ready.status, body: ready.json }).toMatchObject({
          status: 200,
          body: { status: 'ok', info: { mongodb: { status: 'up' }, indexes: { status: 'up' } } },
        });
        const live = await httpRequest(service.baseUrl, { method: 'GET', path: '/health/live' });
        expect({ status: live.status, body: live.json }).toMatchObject({ status: 200, body: { status: 'ok' } });
        // Ready means its indexes are built - in its own database on the run's replica set, not an embedded one.
        const indexes = await mongo.db(service.dbName).collection('idempotency_records').indexes();
        // Every index the schema declares, by name (any one index other than _id_ would not show the build ran).
        const declared = IdempotencyRecordSchema.indexes().map(([, options]) => String((options as { name?: string }).name));
        expect(declared.length).toBeGreaterThan(0);
        expect(indexes.map((index) => index.name)).toEqual(expect.arrayContaining(['_id_', ...declared]));
      },
      TIMEOUT_MS,
    );

    it(
      'SIGTERM drains: the in-flight POST completes 201, new connections are refused, then the process exits',
      async () => {
        const service = await startService({
          dbName: scenarioDbName('proc_sigterm'),
          label: 'sigterm',
          // A provider call long enough for a loaded 2-core machine to see the listener close while it runs.
          env: { PAYMENT_SIMULATOR_LATENCY_MS: '3000' },
        });
        const dbs = dbsFor(service);
        const key = 'proc-sigterm';
        let settledAt = 0;
        const inFlight = postOrder(service.baseUrl, key).finally(() => (settledAt = Date.now()));

        // In flight for sure: the claim transaction has committed its pending order, the provider call (3 s) is running.
        await pollUntil(
          async () => (await ordersForKey(dbs.db, key)).length === 1,
          5_000,
          () => `no order yet\n${service.describe()}`,
          20,
        );
        service.kill('SIGTERM');

        // While it drains, the listener is closed: a new connection is refused before the in-flight request is answered.
        const exited = service.waitForExit(15_000).then((exit) => ({ exit, at: Date.now() }));
        await pollUntil(
          () => refused(service.baseUrl),
          2_500,
          () => 'still accepting connections after SIGTERM',
          20,
        );
        expect(settledAt).toBe(0);

        const res = await inFlight;
        expect({ status: res.status, state: res.json?.state }).toEqual({ status: 201, state: 'saved' });
        // Both are event times (the exit is watched from before the answer came): the answer came first.
        const { exit, at: exitedAt } = await exited;
        expect(exitedAt).toBeGreaterThanOrEqual(settledAt);
        // Nest runs the shutdown hooks, then re-raises the signal: killed by SIGTERM (a clean exit 0 would also do).
        expect(exit.code === 0 || (exit.code === null && exit.signal === 'SIGTERM')).toBe(true);
        expect(await refused(service.baseUrl)).toBe(true);
        expect(service.stderr()).not.toMatch(STACK_LINE);

        expect(await ordersForKey(dbs.db, key)).toMatchObject([{ _id: res.json.id, state: 'saved' }]);
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [res.json.id] })).toEqual([]);
      },
      TIMEOUT_MS,
    );
  });

  describe('scale-out: two instances on one database', () => {
    let a: ServiceProcess;
    let b: ServiceProcess;
    let dbs: Databases;

    beforeAll(async () => {
      const dbName = scenarioDbName('proc_scale');
      const shared = { dbName, simulatorDbName: `${dbName}_psp`, env: { PAYMENT_SIMULATOR_LATENCY_MS: '300' } };
      // Booted together: both build the same indexes at once.
      [a, b] = await Promise.all([startService({ ...shared, label: 'instance-a' }), startService({ ...shared, label: 'instance-b' })]);
      dbs = dbsFor(a);
    }, TIMEOUT_MS);
    beforeEach(async () => {
      await emptyDatabases(dbs);
      for (const instance of [a, b]) expect(instance.exitStatus()).toBeNull();
    });
    afterAll(async () => {
      await killAllServices();
    });

    it(
      'the same key sent to both at once: 201 or 409 each, one order, one charge',
      async () => {
        const key = 'proc-scale-concurrent';
        const responses = await Promise.all([postOrder(a.baseUrl, key), postOrder(b.baseUrl, key)]);
        for (const res of responses) expect([201, 409]).toContain(res.status);
        const created = responses.filter((res) => res.status === 201);
        expect(created.length).toBeGreaterThanOrEqual(1);

        const orders = await ordersForKey(dbs.db, key);
        expect(orders).toHaveLength(1);
        expect(orders[0]).toMatchObject({ state: 'saved' });
        for (const res of created) expect(res.json.id).toBe(orders[0]._id);
        for (const res of responses.filter((candidate) => candidate.status === 409)) {
          expect(res.json?.code).toBe('idempotency_key_in_use');
          expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [orders[0]._id] })).toEqual([]);

        // The instance that answered 409 replays the winner's result once asked again.
        const again = await postOrder(responses[0].status === 409 ? a.baseUrl : b.baseUrl, key);
        expect({ status: again.status, replayed: again.headers['idempotent-replayed'], id: again.json?.id }).toEqual({
          status: 201,
          replayed: 'true',
          id: orders[0]._id,
        });
      },
      TIMEOUT_MS,
    );

    it(
      "the same key to instance A, then to instance B: B replays A's result (same status and body), one order",
      async () => {
        const key = 'proc-scale-sequential';
        const first = await postOrder(a.baseUrl, key);
        expect(first.status).toBe(201);
        expect(first.headers['idempotent-replayed']).toBeUndefined();

        const second = await postOrder(b.baseUrl, key);
        expect(second.status).toBe(201);
        expect(second.headers['idempotent-replayed']).toBe('true');
        expect(second.text).toBe(first.text);
        expect(second.headers.location).toBe(first.headers.location);

        expect(await ordersForKey(dbs.db, key)).toMatchObject([{ _id: first.json.id, state: 'saved' }]);
        expect(await succeededCharges(dbs.simulatorDb)).toBe(1);
        expect(await findViolations({ ...dbs, requireSettled: true, acknowledgedOrderIds: [first.json.id] })).toEqual([]);
      },
      TIMEOUT_MS,
    );
  });
});
