// Refund crashes with real processes: the built service SIGKILLs itself at a
// refund fault point (FAULT_INJECTION=true FAULT_CRASH_AT=<point>), is started
// again without the fault, and the refund must end exactly once - finished by
// the client's retry, or by the reaper with no retry at all.
// (test/refunds/refunds.e2e-spec.ts drives the same paths in-process.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import { findViolations } from '../support/invariants.js';
import {
  ACME_AUTH,
  connectMongo,
  databasesOf,
  emptyDatabases,
  httpRequest,
  killAllServices,
  pollUntil,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
  type Databases,
  type HttpResponse,
} from '../support/service-process.js';

type RefundCrashPoint = 'after-refund-claim' | 'after-refund-provider';

const LEASE_MS = 1000;
const SETTLE_DEADLINE_MS = 15_000;
const SCENARIO_TIMEOUT_MS = 60_000;
/** SIGKILL drops the connection: the kernel closes the socket with no HTTP response. */
const DROPPED = /socket hang up|ECONNRESET|EPIPE/;

/** `check` until it passes (returning its value) or `timeoutMs` ends; then its last failure is thrown. */
async function eventually<T>(check: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
const AMOUNT = 900;

describe('refunds: real processes killed mid-refund', () => {
  let mongo: MongoClient;
  let current: Databases | null = null;

  beforeAll(async () => {
    mongo = await connectMongo();
  });
  afterEach(async () => {
    await killAllServices();
    if (current) {
      await emptyDatabases(current);
      await current.db.collection('refunds').deleteMany({});
      await current.simulatorDb.collection('operations').deleteMany({});
    }
    current = null;
  });
  afterAll(async () => {
    await killAllServices();
    await mongo?.close();
  });

  const postRefund = (baseUrl: string, orderId: string, key: string): Promise<HttpResponse> =>
    httpRequest(baseUrl, {
      method: 'POST',
      path: `/v1/orders/${orderId}/refunds`,
      headers: { ...ACME_AUTH, 'Idempotency-Key': key },
      body: { amountMinor: AMOUNT, reason: 'requested_by_customer' },
    });
  const providerRefunds = (dbs: Databases) =>
    dbs.simulatorDb.collection('operations').countDocuments({ kind: 'refund', status: 'succeeded' });

  /** A saved order, then a refund the process dies in; the databases as the kill left them. */
  async function crashAt(point: RefundCrashPoint, prefix: string, key: string) {
    const service = await startService({
      dbName: scenarioDbName(prefix),
      label: `refund-crash@${point}`,
      env: { FAULT_INJECTION: 'true', FAULT_CRASH_AT: point, REAPER_ENABLED: 'false', IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS) },
    });
    const dbs = (current = databasesOf(mongo, service));
    const order = await postOrder(service.baseUrl, `order-${key}`);
    expect(order.status).toBe(201);
    const orderId = order.json.id as string;
    await expect(postRefund(service.baseUrl, orderId, key)).rejects.toThrow(DROPPED);
    expect(await service.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const refunds = await dbs.db.collection('refunds').find({}).toArray();
    expect(refunds.map((refund) => refund.state)).toEqual(['pending']);
    expect(await providerRefunds(dbs)).toBe(point === 'after-refund-provider' ? 1 : 0);
    // The reservation is held while the refund is pending.
    expect(await dbs.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({ refundableMinor: 2500 - AMOUNT });
    return { dbs, orderId, refundId: refunds[0]._id as unknown as string };
  }

  const restart = (dbs: Databases, label: string, env: Record<string, string>) =>
    startService({ dbName: dbs.db.databaseName, simulatorDbName: dbs.simulatorDb.databaseName, label, env });

  describe.each(['after-refund-claim', 'after-refund-provider'] as const)('crash at %s', (point) => {
    it(
      "retry after restart: once the dead worker's lease is over (409 until then), 201 with the same refund, one provider refund",
      async () => {
        const key = `refund-retry-${point}`;
        const { dbs, orderId, refundId } = await crashAt(point, `refund_retry_${point}`, key);
        const service = await restart(dbs, `refund-retry@${point}`, {
          REAPER_ENABLED: 'false',
          IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS),
          IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0',
        });
        const deadline = Date.now() + SETTLE_DEADLINE_MS;
        let res = await postRefund(service.baseUrl, orderId, key);
        while (res.status === 409 && Date.now() < deadline) {
          expect(res.json.code).toBe('idempotency_key_in_use');
          await sleep(LEASE_MS / 2);
          res = await postRefund(service.baseUrl, orderId, key);
        }
        expect({ status: res.status, body: res.json }).toMatchObject({ status: 201, body: { id: refundId, state: 'succeeded' } });
        expect(await providerRefunds(dbs)).toBe(1);
        expect(await dbs.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({
          state: 'partially_refunded',
          refundedMinor: AMOUNT,
          refundableMinor: 2500 - AMOUNT,
        });
        expect(await findViolations({ ...dbs, requireSettled: true })).toEqual([]);
      },
      SCENARIO_TIMEOUT_MS,
    );

    it(
      `reaper after restart, no retry: the refund ends ${point === 'after-refund-provider' ? 'succeeded (the provider refunded)' : 'abandoned (nothing refunded, the key canceled, the reservation back)'}`,
      async () => {
        const key = `refund-reap-${point}`;
        const { dbs, orderId } = await crashAt(point, `refund_reap_${point}`, key);
        const service = await restart(dbs, `refund-reap@${point}`, {
          REAPER_ENABLED: 'true',
          REAPER_INTERVAL_MS: '300',
          IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS),
        });
        await pollUntil(
          async () => (await dbs.db.collection('idempotency_records').countDocuments({ status: 'pending' })) === 0,
          SETTLE_DEADLINE_MS,
          async () => `still pending after ${SETTLE_DEADLINE_MS} ms\n${service.describe()}`,
        );
        // Read from outside while the reaper may still be committing: the emulator serializes transactions
        // but lets a read outside them see one half-way (the record failed, its refund not yet), so the
        // end state is awaited as a whole; on a real mongod the first read already sees it all or nothing.
        const refund = await eventually(async () => {
          const found = await dbs.db.collection('refunds').findOne({});
          const order = await dbs.db.collection('orders').findOne({ _id: orderId as never });
          if (point === 'after-refund-provider') {
            expect(found).toMatchObject({ state: 'succeeded' });
            expect(order).toMatchObject({ refundedMinor: AMOUNT, refundableMinor: 2500 - AMOUNT });
          } else {
            expect(found).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
            expect(order).toMatchObject({ state: 'saved', refundedMinor: 0, refundableMinor: 2500 });
          }
          return found;
        }, SETTLE_DEADLINE_MS);
        if (point === 'after-refund-provider') {
          expect(await providerRefunds(dbs)).toBe(1);
          const replay = await postRefund(service.baseUrl, orderId, key);
          expect([replay.status, replay.headers['idempotent-replayed'], replay.json.id]).toEqual([201, 'true', refund!._id]);
        } else {
          expect(await providerRefunds(dbs)).toBe(0);
          expect(await dbs.simulatorDb.collection('operations').countDocuments({ status: 'canceled' })).toBe(1);
        }
        expect(await findViolations({ ...dbs, requireSettled: true })).toEqual([]);
      },
      SCENARIO_TIMEOUT_MS,
    );
  });
});
