import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import type { FaultPoint } from '../../src/config/configuration.js';
import { manualCaptureViolations } from '../support/manual-capture-invariants.js';
import {
  ACME_AUTH,
  connectMongo,
  databasesOf,
  emptyDatabases,
  httpRequest,
  killAllServices,
  orderBody,
  pollUntil,
  scenarioDbName,
  sleep,
  startService,
  type Databases,
  type HttpResponse,
} from '../support/service-process.js';

const LEASE_MS = 1000;
/** SIGKILL drops the connection: the kernel closes the socket with no HTTP response. */
const DROPPED = /socket hang up|ECONNRESET|EPIPE/;
const POINTS: FaultPoint[] = ['after-capture-claim', 'after-capture-provider', 'after-void-claim', 'after-void-provider'];

/**
 * The capture and void crash points with real processes (FAULT_CRASH_AT:
 * the service SIGKILLs itself there), then a restarted service with the
 * reaper on and a client retrying the same key: whichever of the two gets
 * there first, the operation happens once at the provider and the books
 * agree with it. The in-process version (test/capture-void/capture-void.e2e-spec.ts)
 * takes each path on its own.
 */
describe('capture and void: real processes killed mid-operation', () => {
  let mongo: MongoClient;
  let current: Databases | null = null;

  beforeAll(async () => {
    mongo = await connectMongo();
  });
  afterEach(async () => {
    await killAllServices();
    if (current) {
      await emptyDatabases(current);
      await current.simulatorDb.collection('operations').deleteMany({});
    }
    current = null;
  });
  afterAll(async () => {
    await killAllServices();
    await mongo?.close();
  });

  const post = (baseUrl: string, path: string, key: string, body?: unknown): Promise<HttpResponse> =>
    httpRequest(baseUrl, { method: 'POST', path, headers: { ...ACME_AUTH, 'Idempotency-Key': key }, body: body ?? {} });

  it.each(POINTS)(
    'crash at %s: after a restart the reaper or the retry finishes it, once at the provider',
    async (point) => {
      const kind = point.includes('capture') ? 'capture' : 'void';
      const done = kind === 'capture' ? 'captured' : 'voided';
      const dbName = scenarioDbName(`capture_void_${point.replace(/-/g, '_')}`);
      const crashing = await startService({
        dbName,
        label: `crash@${point}`,
        env: { FAULT_INJECTION: 'true', FAULT_CRASH_AT: point, REAPER_ENABLED: 'false', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS) },
      });
      const dbs = (current = databasesOf(mongo, crashing));
      const created = await post(crashing.baseUrl, '/v1/orders', 'k-create', orderBody({ capture: 'manual' }));
      expect(created.status).toBe(201);
      const id = created.json.id as string;
      await expect(post(crashing.baseUrl, `/v1/orders/${id}/${kind}`, `k-${kind}`)).rejects.toThrow(DROPPED);
      expect(await crashing.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
      const left = await dbs.db.collection('orders').findOne({ _id: id as never });
      expect(left).toMatchObject({ state: 'authorized', pendingAction: expect.objectContaining({ kind }) });
      const acted = await dbs.simulatorDb.collection('operations').countDocuments({ kind, status: 'succeeded' });
      expect(acted).toBe(point.endsWith('provider') ? 1 : 0);

      const restarted = await startService({
        dbName: crashing.dbName,
        simulatorDbName: crashing.simulatorDbName,
        label: `restart@${point}`,
        env: { REAPER_INTERVAL_MS: '200', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0' },
      });
      // The client retries the same key until it is not told to wait (the dead worker's lease, or the reaper at work).
      const answer = await pollUntil(
        async () => {
          const res = await post(restarted.baseUrl, `/v1/orders/${id}/${kind}`, `k-${kind}`);
          if (res.status === 409 && res.json?.code === 'idempotency_key_in_use') {
            await sleep(100);
            return null;
          }
          return res;
        },
        20_000,
        () => restarted.describe(),
      );
      expect({ status: answer.status, state: answer.json?.state }).toEqual({ status: 200, state: done });
      expect(await dbs.db.collection('orders').findOne({ _id: id as never })).toMatchObject({ state: done, pendingAction: null });
      expect(await dbs.simulatorDb.collection('operations').countDocuments({ kind, status: 'succeeded' })).toBe(1);
      expect(await dbs.db.collection('ledger_entries').countDocuments({ orderId: id })).toBe(kind === 'capture' ? 4 : 0);
      // Settled for good: the reaper leaves nothing pending, and the same key answers the same bytes.
      await pollUntil(
        async () => (await dbs.db.collection('idempotency_records').countDocuments({ status: 'pending' })) === 0,
        10_000,
        () => 'a record is still pending',
      );
      const replay = await post(restarted.baseUrl, `/v1/orders/${id}/${kind}`, `k-${kind}`);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(answer.text);
      expect(await manualCaptureViolations(dbs.db, dbs.simulatorDb)).toEqual([]);
    },
    90_000,
  );
});
