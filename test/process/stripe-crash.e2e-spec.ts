// The crash matrix once on the Stripe adapter: the built service (PAYMENT_PROVIDER=stripe,
// talking to the Stripe fake) SIGKILLs itself at a fault point, is started again with the
// reaper on and no client retry, and the order must end exactly once - saved when Stripe
// charged (the reaper's tombstone is refused: the journaled request is replayed for the
// PaymentIntent), failed/abandoned when nothing was sent (the journal's tombstone; Stripe
// is not even asked). Then the client comes back.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import { findViolations } from '../support/invariants.js';
import {
  connectMongo,
  databasesOf,
  killAllServices,
  ordersForKey,
  pollUntil,
  postOrder,
  scenarioDbName,
  startService,
  type ServiceProcess,
} from '../support/service-process.js';
import { exportBooks } from '../support/stripe-fake/provider-books.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';

const LEASE_MS = 1000;
const SETTLE_DEADLINE_MS = 15_000;
const DROPPED = /socket hang up|ECONNRESET|EPIPE/;

describe('chaos on the Stripe adapter: real processes killed mid-request', () => {
  const fake = new StripeFake();
  let mongo: MongoClient;

  beforeAll(async () => {
    await fake.start();
    mongo = await connectMongo();
  });
  afterEach(async () => {
    await killAllServices();
    expect(fake.violations.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await killAllServices();
    await fake.stop();
    await mongo?.close();
  });

  const stripeEnv = () => ({
    PAYMENT_PROVIDER: 'stripe',
    STRIPE_SECRET_KEY: 'sk_test_fake0123456789',
    STRIPE_WEBHOOK_SECRET: 'whsec_fake0123456789abcdef',
    STRIPE_API_BASE: `http://127.0.0.1:${fake.port}`,
    IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS),
  });
  const money = (orderId: string) =>
    [...fake.intents.values()].filter(
      (pi) => (pi.metadata as Record<string, string>).charge_key === `charge:${orderId}` && pi.status === 'succeeded',
    );

  it.each([
    ['after-charge', true],
    ['after-claim', false],
  ] as const)(
    'crash at %s, reaper after restart, no retry: the order ends once (charged: %s)',
    async (point, charged) => {
      // One scenario's money per fake: the books below are this scenario's.
      fake.reset();
      const key = `stripe-chaos-${point}`;
      const dbName = scenarioDbName(`stripe_chaos_${point.replace('-', '_')}`);
      const crashing: ServiceProcess = await startService({
        dbName,
        label: `stripe-crash@${point}`,
        env: { ...stripeEnv(), FAULT_INJECTION: 'true', FAULT_CRASH_AT: point, REAPER_ENABLED: 'false' },
      });
      const dbs = databasesOf(mongo, crashing);
      await expect(postOrder(crashing.baseUrl, key)).rejects.toThrow(DROPPED);
      expect(await crashing.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
      const [crashed] = await ordersForKey(dbs.db, key);
      const orderId = crashed._id as unknown as string;
      expect(money(orderId)).toHaveLength(charged ? 1 : 0);

      const restarted = await startService({
        dbName,
        label: `stripe-reaper@${point}`,
        env: { ...stripeEnv(), REAPER_ENABLED: 'true', REAPER_INTERVAL_MS: '300' },
      });
      await pollUntil(
        async () => (await dbs.db.collection('orders').countDocuments({ state: { $in: ['pending', 'charged'] } })) === 0,
        SETTLE_DEADLINE_MS,
        async () => `still pending: ${JSON.stringify(await ordersForKey(dbs.db, key))}\n${restarted.describe()}`,
      );
      const orders = await ordersForKey(dbs.db, key);
      if (charged) {
        expect(orders.map((order) => [order._id, order.state])).toEqual([[orderId, 'saved']]);
      } else {
        expect(orders.map((order) => [order._id, order.state, order.failureReason])).toEqual([[orderId, 'failed', 'abandoned']]);
        // Nothing had been sent under the charge key: the journal's tombstone, and Stripe never saw the key.
        expect(fake.requests.filter((r) => r.key === `charge:${orderId}`)).toEqual([]);
        expect(await dbs.db.collection('stripe_requests').findOne({ _id: `charge:${orderId}` as never })).toMatchObject({
          call: { kind: 'canceled' },
        });
      }
      expect(money(orderId)).toHaveLength(charged ? 1 : 0);

      // The client comes back: the saved order is replayed; an abandoned attempt is retried as a new order.
      const later = await postOrder(restarted.baseUrl, key);
      expect(later.status).toBe(201);
      if (charged) expect(later.json.id).toBe(orderId);
      else expect(later.json.id).not.toBe(orderId);
      const books = mongo.db(`${dbName}_stripe_books`);
      await exportBooks(fake, books);
      const mine = { db: dbs.db, simulatorDb: books };
      expect(await findViolations({ ...mine, requireSettled: true, acknowledgedOrderIds: [later.json.id] })).toEqual([]);
    },
    60_000,
  );
});
