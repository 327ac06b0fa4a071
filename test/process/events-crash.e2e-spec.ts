// Events with real processes and a real nats-server: the built service
// SIGKILLed between the broker's ack and its mark, two services relaying one
// outbox, and a boot refused on a contradicting stream.
// (test/events/*.e2e-spec.ts drives the same relay in-process, in the gate.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { MongoClient } from 'mongodb';
import { readStream } from '../events/stream-reader.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import {
  connectMongo,
  databasesOf,
  emptyDatabases,
  killAllServices,
  postOrder,
  scenarioDbName,
  spawnService,
  startService,
  type Databases,
} from '../support/service-process.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/process/events-crash: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(done: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await sleep(200);
  }
}

describeNats('events: real processes and a real nats-server', () => {
  let nats: NatsServer;
  let mongo: MongoClient;
  let current: Databases | null = null;

  beforeAll(async () => {
    nats = await startNatsServer((found as { binary: string }).binary);
    mongo = await connectMongo();
  });
  afterEach(async () => {
    await killAllServices();
    if (current) {
      await emptyDatabases(current);
      await current.db.collection('outbox_sequences').deleteMany({});
    }
  });
  afterAll(async () => {
    await mongo?.close();
    await nats?.stop();
  });

  const eventIds = async (db: Databases) =>
    (await db.db.collection('outbox_events').find({}).toArray()).map((event) => String(event._id)).sort();
  const inStream = async (ids: string[]) => (await readStream(nats.url)).filter((message) => ids.includes(message.event.id));

  it('a service SIGKILLed between the broker ack and the mark: the event is published again, the stream drops the repeat', async () => {
    const dbName = scenarioDbName('events_kill');
    const writer = await startService({ dbName, label: 'writer', env: { NATS_URL: nats.url } });
    current = databasesOf(mongo, writer);
    expect((await postOrder(writer.baseUrl, 'k-kill')).status).toBe(201);
    writer.kill('SIGTERM');
    await writer.waitForExit();

    // Relays at once, publishes the event, and dies before writing the mark.
    const doomed = await startService({
      dbName,
      label: 'doomed',
      env: {
        NATS_URL: nats.url,
        OUTBOX_RELAY_INTERVAL_MS: '100',
        FAULT_INJECTION: 'true',
        FAULT_CRASH_AT: 'after-event-publish',
        OUTBOX_PUBLISH_TIMEOUT_MS: '1000',
      },
      waitReady: false,
    });
    expect((await doomed.waitForExit(45_000)).signal).toBe('SIGKILL');
    const ids = await eventIds(current);
    expect(ids).toHaveLength(1);
    expect(await inStream(ids)).toHaveLength(1);
    expect(await current.db.collection('outbox_events').findOne({})).toMatchObject({ status: 'pending', attempts: 1 });

    // The claim expires (2 x 1 s); the next relay publishes it again.
    await startService({
      dbName,
      label: 'survivor',
      env: { NATS_URL: nats.url, OUTBOX_RELAY_INTERVAL_MS: '100', OUTBOX_PUBLISH_TIMEOUT_MS: '1000' },
    });
    await until(
      async () => (await current!.db.collection('outbox_events').countDocuments({ status: 'published' })) === 1,
      30_000,
      'the event published',
    );
    expect(await current.db.collection('outbox_events').findOne({})).toMatchObject({ status: 'published', attempts: 2 });
    const messages = await inStream(ids);
    expect(messages).toHaveLength(1); // JetStream acked the repeat as a duplicate of Nats-Msg-Id
    expect(messages[0].msgId).toBe(ids[0]);
  });

  it('two services relaying one outbox under creates: each event in the stream once, one order at a time', async () => {
    const dbName = scenarioDbName('events_two');
    const env = { NATS_URL: nats.url, OUTBOX_RELAY_INTERVAL_MS: '50', OUTBOX_BATCH_SIZE: '5' };
    const services = [await startService({ dbName, label: 'a', env }), await startService({ dbName, label: 'b', env })];
    current = databasesOf(mongo, services[0]);
    for (let i = 0; i < 20; i++) expect((await postOrder(services[i % 2].baseUrl, `k-two-${i}`)).status).toBe(201);
    await until(
      async () => (await current!.db.collection('outbox_events').countDocuments({ status: 'published' })) === 20,
      60_000,
      'all published',
    );
    const ids = await eventIds(current);
    const messages = await inStream(ids);
    expect(messages.map((message) => message.msgId).sort()).toEqual(ids);
  });

  it('refuses to start on a stream that contradicts what the relay needs, saying why in one line', async () => {
    const connection = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(connection);
    await jsm.streams.add({ name: 'CONTRADICTING', subjects: ['payments.>'], storage: StorageType.File, duplicate_window: 600e9 });
    await connection.close();
    const service = await spawnService({
      dbName: scenarioDbName('events_refused'),
      label: 'refused',
      env: { NATS_URL: nats.url, NATS_STREAM: 'CONTRADICTING' },
    });
    const exit = await service.waitForExit(45_000);
    expect(exit.code).toBe(1);
    const refusal = service
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('Startup failed'));
    expect(refusal).toEqual([
      expect.stringMatching(
        /^Startup failed: NATS stream CONTRADICTING cannot take this service's events: its subjects \[payments\.>\] do not include orders\.events\.>; .* Fix or delete the stream, or set NATS_STREAM\.$/,
      ),
    ]);
  });
});
