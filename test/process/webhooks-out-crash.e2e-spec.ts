// Outgoing webhooks with a real process SIGKILLed mid-delivery (issue 46): the built service is killed while its
// attempts are open at a loopback receiver, started again on the same database, and every event must still be
// delivered, any repeat carrying the same webhook-id (the receiver deduplicates on it).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
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
  startService,
  type Databases,
} from '../support/service-process.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { answer, Receiver } from '../webhook-endpoints/receiver.js';

const TIMEOUT_MS = 2000;
const ENV = {
  OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
  OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: '0,300,300,300,300',
  OUTGOING_WEBHOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
  OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
  OUTBOX_RELAY_INTERVAL_MS: '100',
  OUTBOX_PUBLISH_TIMEOUT_MS: '1000',
};
const EVENTS = 3;

// Both transports: the in-process bus, and JetStream (NATS_URL) where a nats-server is installed.
const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED the JetStream case of test/process/webhooks-out-crash: ${found.missing}`);
const TRANSPORTS = 'missing' in found ? (['in-process'] as const) : (['in-process', 'jetstream'] as const);

describe.each(TRANSPORTS)('outgoing webhooks: the service SIGKILLed mid-delivery, on %s', (transport) => {
  let mongo: MongoClient;
  let dbs: Databases | null = null;
  let nats: NatsServer | null = null;
  let env: Record<string, string> = ENV;
  const receiver = new Receiver();

  beforeAll(async () => {
    mongo = await connectMongo();
    await receiver.start();
    if (transport === 'jetstream') {
      nats = await startNatsServer((found as { binary: string }).binary);
      env = { ...ENV, NATS_URL: nats.url };
    }
  });
  afterEach(async () => {
    await killAllServices();
    if (dbs) {
      await emptyDatabases(dbs);
      for (const name of ['webhook_endpoints', 'webhook_deliveries', 'idempotency_inbox', 'restart_barrier'])
        await dbs.db.collection(name).deleteMany({});
    }
  });
  afterAll(async () => {
    await nats?.stop();
    await receiver.stop();
    await mongo.close();
  });

  it('every event is still delivered, and a repeat carries the same webhook-id', async () => {
    const dbName = scenarioDbName('webhooks_out_crash');
    const first = await startService({ dbName, env, label: 'first' });
    dbs = databasesOf(mongo, first);
    // Until the kill, the receiver takes every request and never answers: the attempts are in flight.
    receiver.behaviour = receiver.hang;
    receiver.received.length = 0;

    const created = await httpRequest(first.baseUrl, {
      method: 'POST',
      path: '/v1/webhook-endpoints',
      headers: { ...ACME_AUTH, 'Idempotency-Key': 'endpoint-1' },
      body: { url: receiver.url, events: ['order.completed'] },
    });
    expect(created.status).toBe(201);
    for (let i = 1; i <= EVENTS; i++) expect((await postOrder(first.baseUrl, `order-${i}`)).status).toBe(201);

    const eventIds = await pollUntil(
      async () => {
        const ids = (await dbs!.db.collection('outbox_events').find({ type: 'order.completed' }).toArray()).map((e) => String(e._id));
        return ids.length === EVENTS && receiver.received.length >= 1 ? ids : null;
      },
      30_000,
      () => `an attempt in flight (received ${receiver.received.length})\n${first.describe()}`,
    );
    first.kill('SIGKILL');
    await first.waitForExit();
    const inFlight = receiver.received.map((r) => r.headers['webhook-id']);
    receiver.behaviour = answer(200);
    // The kill can land inside one of the dead process's transactions (its relay and dispatcher run every 100 ms).
    // The store gives such a transaction up on its own (mongod after transactionLifetimeLimitSeconds, the emulator's
    // proxy after 5 s idle), and until then a write outside any transaction waits behind it - as the restarted
    // service's index build at boot would, past its 3 s socket timeout. This write returns once it is given up.
    await dbs.db.collection('restart_barrier').insertOne({ after: 'kill' });

    // Started again on the same database: its workers take the dead worker's deliveries once their leases lapse.
    const second = await startService({ dbName, env, label: 'second' });
    await pollUntil(
      async () => (await dbs!.db.collection('webhook_deliveries').countDocuments({ status: 'succeeded' })) === EVENTS,
      60_000,
      async () =>
        `all delivered: ${JSON.stringify(
          await dbs!.db
            .collection('webhook_deliveries')
            .find({}, { projection: { payload: 0 } })
            .toArray(),
        )}\n${second.describe()}`,
    );

    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    expect(new Set(ids)).toEqual(new Set(eventIds));
    // Every attempt cut by the kill was repeated with its own webhook-id, not a new one.
    for (const id of inFlight) expect(ids.filter((x) => x === id).length).toBeGreaterThanOrEqual(2);
    expect(await dbs.db.collection('webhook_deliveries').countDocuments()).toBe(EVENTS);
  });
});
