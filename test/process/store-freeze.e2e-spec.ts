// A frozen store (issue 13, item 5): the server process is paused with
// SIGSTOP - it accepts connections and never answers - under the real service
// process with its default timeouts. Requests must get 503 store_unavailable
// + Retry-After within seconds, readiness must say so within its own bound,
// and once the store resumes (SIGCONT) the service must serve again with no
// 500 and no double work. Uses a private store, never the run's shared one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { findViolations } from '../support/invariants.js';
import { scaled, slowdown } from '../support/machine-load.js';
import { startPrivateStore, type PrivateStore } from '../support/private-store.js';
import {
  ACME_AUTH,
  httpRequest,
  killAllServices,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
  timed,
  type Timed,
  type ServiceProcess,
} from '../support/service-process.js';

/**
 * With the defaults: a request arriving at a frozen store waits for one
 * socket timeout or pool wait (3 s, 2 s) - or both, when it took an idle
 * pooled connection: its read times out (3 s) and the driver retries it once
 * on a new connection (2 s pool wait), measured at 5.003-5.007 s; whether
 * such an idle connection exists at the freeze depends on how many requests
 * overlapped before it. One already in flight can meet two or three in a row
 * (the driver retries a write once, the lease is given back), measured at
 * 5-7 s. Generous bounds: a timing test must not flake.
 */
/**
 * Each bound is the configured waits plus slack, and the slack stretches with
 * how much slower than idle the machine runs now (test/support/machine-load.ts,
 * at most 4x, which keeps every bound under the requests' own 30 s): the
 * timers do not slow down under load, the work around them does.
 */
const bounds = (slow: number) => ({
  newRequest: 5_000 + scaled(1_000, slow),
  inFlight: 7_000 + scaled(5_000, slow),
  /** Defaults: MONGODB_PING_TIMEOUT_MS (1 s) plus slack. */
  readyAnswer: 1_000 + scaled(1_500, slow),
  live: scaled(1_000, slow),
});

const describeTimed = (t: Timed) => `${t.res?.status ?? t.error} in ${t.ms} ms ${t.res?.text.slice(0, 160) ?? ''}`;

describe('a frozen store', () => {
  let store: PrivateStore;
  let service: ServiceProcess;
  let mongo: MongoClient;
  const acknowledged: string[] = [];

  beforeAll(async () => {
    store = await startPrivateStore();
    service = await startService({ dbName: scenarioDbName('freeze'), label: 'freeze', env: { MONGODB_URI: store.uri } });
    mongo = await MongoClient.connect(store.uri, { serverMonitoringMode: 'poll', serverSelectionTimeoutMS: 5_000 });
  }, 90_000); // two boots (a private store, then the service, which may take 45 s on a loaded machine)
  afterAll(async () => {
    store?.thaw();
    await killAllServices();
    await mongo?.close();
    await store?.stop();
  });

  it('answers 503 + Retry-After within seconds while frozen, and serves again with no 500 once it resumes', async () => {
    for (let i = 0; i < 3; i++) {
      const warm = await postOrder(service.baseUrl, `k-warm-${i}`);
      expect(warm.status).toBe(201);
      acknowledged.push(warm.json.id);
    }

    // One client keeps working across the freeze, one request after another.
    let stopWorker = false;
    const workerResults: Timed[] = [];
    const worker = (async () => {
      for (let i = 0; !stopWorker; i++) {
        const result = await timed(() => postOrder(service.baseUrl, `k-worker-${i}`, undefined, 30_000));
        workerResults.push(result);
        if (result.res?.status === 201) acknowledged.push(result.res.json.id);
      }
    })();
    await sleep(300);

    const bound = bounds(Math.min(4, await slowdown()));
    store.freeze();
    const frozenAt = Date.now();
    const burst = () =>
      Promise.all([
        Promise.all(
          Array.from({ length: 6 }, (_, i) => timed(() => postOrder(service.baseUrl, `k-frozen-${Date.now()}-${i}`, undefined, 30_000))),
        ),
        Promise.all(
          acknowledged
            .slice(0, 2)
            .map((id) =>
              timed(() => httpRequest(service.baseUrl, { method: 'GET', path: `/v1/orders/${id}`, headers: ACME_AUTH, timeoutMs: 30_000 })),
            ),
        ),
        timed(() => httpRequest(service.baseUrl, { method: 'GET', path: '/health/ready', timeoutMs: 30_000 })),
        timed(() => httpRequest(service.baseUrl, { method: 'GET', path: '/health/live', timeoutMs: 30_000 })),
      ]);
    // At once (requests on pooled connections wait for replies), then once the
    // driver has given up on the server (its heartbeat and sockets timed out).
    const first = await burst();
    await sleep(Math.max(0, 6_000 - (Date.now() - frozenAt)));
    const second = await burst();

    for (const [posts, reads, ready, live] of [first, second]) {
      for (const answer of [...posts, ...reads]) {
        expect({ status: answer.res?.status, code: answer.res?.json?.code, detail: describeTimed(answer) }).toMatchObject({
          status: 503,
          code: 'store_unavailable',
        });
        expect(Number(answer.res!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(answer.ms).toBeLessThan(bound.newRequest);
      }
      expect({ status: ready.res?.status, code: ready.res?.json?.code, mongodb: ready.res?.json?.details?.mongodb?.status }).toEqual({
        status: 503,
        code: 'not_ready',
        mongodb: 'down',
      });
      expect(ready.ms).toBeLessThan(bound.readyAnswer);
      expect(live.res?.status).toBe(200);
      expect(live.ms).toBeLessThan(bound.live);
    }

    store.thaw();
    const thawedAt = Date.now();
    // Back within a few seconds: sequential requests (the emulator loses writes under concurrent transactions).
    const after: Timed[] = [];
    while (Date.now() - thawedAt < 20_000 && after.filter((t) => t.res?.status === 201).length < 5) {
      const result = await timed(() => postOrder(service.baseUrl, `k-after-${after.length}`, undefined, 30_000));
      after.push(result);
      if (result.res?.status === 201) acknowledged.push(result.res.json.id);
      else await sleep(200);
    }
    stopWorker = true;
    await worker;

    const firstBack = after.findIndex((t) => t.res?.status === 201);
    process.stdout.write(
      `frozen store (${store.description}): slowest 503 ${Math.max(...[first, second].flatMap(([posts, reads]) => [...posts, ...reads]).map((t) => t.ms))} ms, ` +
        `readiness ${first[2].ms}/${second[2].ms} ms; ` +
        `worker: ${workerResults.map((t) => `${t.res?.status ?? 'x'}/${t.ms}`).join(' ')}; first 201 after thaw: request ${firstBack + 1}\n`,
    );
    const unexpected = [...workerResults, ...after].filter((t) => t.res?.status !== 201 && t.res?.status !== 503);
    expect(unexpected.map(describeTimed)).toEqual([]);
    expect(after.filter((t) => t.res?.status === 201)).toHaveLength(5);
    expect(Math.max(...workerResults.map((t) => t.ms))).toBeLessThan(bound.inFlight);
    const readyAgain = await httpRequest(service.baseUrl, { method: 'GET', path: '/health/ready' });
    expect(readyAgain.status).toBe(200);

    // Whatever the freeze interrupted, nothing was done twice (the reaper finishes what is pending).
    const db = mongo.db(service.dbName);
    const simulatorDb = mongo.db(service.simulatorDbName);
    expect(await findViolations({ db, simulatorDb, acknowledgedOrderIds: acknowledged })).toEqual([]);
  }, 60_000);
});
