import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { readStream } from './stream-reader.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/events/broker-outage: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;
const binary = () => (found as { binary: string }).binary;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const metric = (text: string, series: string) =>
  Number(new RegExp(`^${series.replace(/[{}".]/g, '\\$&')} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);

describeNats('the broker SIGKILLed during creates (a real nats-server, restarted on its store)', () => {
  let nats: NatsServer;
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    nats = await startNatsServer(binary());
    t = await startApp({ dbName: 'test_events_outage', env: { NATS_URL: nats.url, OUTBOX_PUBLISH_TIMEOUT_MS: '500' } });
    relay = t.app.get(OutboxRelay);
  });
  afterAll(async () => {
    await t?.close();
    await nats?.stop();
  });

  const create = (key: string) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody());
  const outbox = () => t.db.collection('outbox_events');

  it('creates go on (201), the backlog and the oldest age grow, ready says degraded; back on its store, every event arrives once', async () => {
    for (let i = 0; i < 3; i++) expect((await create(`k-before-${i}`)).status).toBe(201);
    expect(await relay.tick()).toBe(3);

    await nats.kill();
    for (let i = 0; i < 4; i++) expect((await create(`k-during-${i}`)).status).toBe(201);
    await sleep(1100); // the oldest pending event is now more than a second old
    expect(await relay.tick()).toBe(0);
    const during = (await t.http().get('/metrics')).text;
    expect(metric(during, 'outbox_backlog')).toBe(4);
    expect(metric(during, 'outbox_oldest_pending_age_seconds')).toBeGreaterThan(1);
    expect(metric(during, 'events_broker_connected')).toBe(0);
    expect(metric(during, 'jetstream_errors_total{operation="publish",code="timeout"}')).toBeGreaterThan(0);
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.info.events).toEqual({ status: 'up', transport: 'jetstream', degraded: true });

    await nats.start();
    const deadline = Date.now() + 60_000;
    while ((await outbox().countDocuments({ status: 'pending' })) > 0) {
      if (Date.now() > deadline) throw new Error('the backlog did not drain after the broker came back');
      await outbox().updateMany({ status: 'pending' }, { $set: { availableAt: new Date(0) } }); // skip the backoff
      await relay.tick();
      await sleep(200);
    }
    const messages = await readStream(nats.url);
    const ids = (await outbox().find({}).toArray()).map((event) => event._id).sort();
    expect(messages.map((message) => message.msgId).sort()).toEqual(ids); // all 7, none twice
    const after = (await t.http().get('/metrics')).text;
    expect(metric(after, 'outbox_backlog')).toBe(0);
    expect(metric(after, 'outbox_oldest_pending_age_seconds')).toBe(0);
    expect(metric(after, 'events_broker_connected')).toBe(1);
    expect((await t.http().get('/health/ready')).body.info.events.degraded).toBe(false);
  });
});

describeNats('the broker down when the service starts', () => {
  let nats: NatsServer;
  let t: TestApp;

  beforeAll(async () => {
    nats = await startNatsServer(binary());
    await nats.kill(); // its port is now closed: NATS_URL points at a broker that is not there
  });
  afterAll(async () => {
    await t?.close();
    await nats?.stop();
  });

  it('starts degraded and takes creates; once the broker is up the relay publishes and the webhook dispatcher subscribes', async () => {
    // The dispatcher awaited its subscription in the boot, and the subscription waited for the broker: the service
    // did not start (no HTTP at all) until NATS came back. Now this resolves within the connect wait.
    t = await startApp({
      dbName: 'test_events_down_at_boot',
      env: { NATS_URL: nats.url, NATS_CONNECT_WAIT_MS: '500', OUTBOX_PUBLISH_TIMEOUT_MS: '500' },
    });
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'down-at-boot').send(orderBody());
    expect(created.status).toBe(201);
    const ready = await t.http().get('/health/ready');
    expect([ready.status, ready.body.info.events]).toEqual([200, { status: 'up', transport: 'jetstream', degraded: true }]);
    expect(await t.app.get(OutboxRelay).tick()).toBe(0);

    await nats.start();
    const outbox = t.db.collection<{ _id: string; status: string }>('outbox_events');
    const [event] = await outbox.find({}).toArray();
    const inbox = t.db.collection('idempotency_inbox');
    const deadline = Date.now() + 60_000;
    while (
      (await outbox.countDocuments({ status: 'pending' })) > 0 ||
      (await inbox.countDocuments({ _id: `webhook-dispatcher:${event._id}` as never })) === 0
    ) {
      if (Date.now() > deadline) throw new Error('the event did not reach the stream and the dispatcher after the broker came up');
      await outbox.updateMany({ status: 'pending' }, { $set: { availableAt: new Date(0) } }); // skip the backoff
      await t.app.get(OutboxRelay).tick();
      await sleep(200);
    }
    expect((await readStream(nats.url)).map((message) => message.msgId)).toEqual([event._id]);
    expect((await t.http().get('/health/ready')).body.info.events.degraded).toBe(false);
  });
});

describeNats('a broker that takes the connection before its JetStream answers', () => {
  let nats: NatsServer;
  let t: TestApp;

  beforeAll(async () => {
    nats = await startNatsServer(binary(), { jetstream: false });
  });
  afterAll(async () => {
    await t?.close();
    await nats?.stop();
  });

  it('waits degraded, and publishes once JetStream is up on that server (it was dead until a restart)', async () => {
    // A cluster electing its meta leader, or a server started without -js, connects clients while its JetStream
    // API has no responders. The manager's first call was outside every retry: the broker stayed failed for the
    // life of the process while health said connected.
    t = await startApp({
      dbName: 'test_events_no_jetstream_yet',
      env: { NATS_URL: nats.url, NATS_CONNECT_WAIT_MS: '500', OUTBOX_PUBLISH_TIMEOUT_MS: '500' },
    });
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'no-js-yet').send(orderBody());
    expect(created.status).toBe(201);
    expect((await t.http().get('/health/ready')).body.info.events).toEqual({ status: 'up', transport: 'jetstream', degraded: true });
    expect(metric((await t.http().get('/metrics')).text, 'events_broker_connected')).toBe(0);
    expect(await t.app.get(OutboxRelay).tick()).toBe(0);

    await nats.stop();
    nats = await startNatsServer(binary(), { port: nats.port }); // the same address, now with JetStream
    const outbox = t.db.collection<{ _id: string; status: string }>('outbox_events');
    const deadline = Date.now() + 30_000;
    while ((await outbox.countDocuments({ status: 'pending' })) > 0) {
      if (Date.now() > deadline) throw new Error('the event never reached the stream once JetStream was up');
      await outbox.updateMany({ status: 'pending' }, { $set: { availableAt: new Date(0) } }); // skip the backoff
      await t.app.get(OutboxRelay).tick();
      await sleep(200);
    }
    const [event] = await outbox.find({}).toArray();
    expect((await readStream(nats.url)).map((message) => message.msgId)).toEqual([event._id]);
    expect((await t.http().get('/health/ready')).body.info.events.degraded).toBe(false);
    expect(metric((await t.http().get('/metrics')).text, 'events_broker_connected')).toBe(1);
  }, 60_000);
});

describeNats('a stream whose settings contradict what the relay needs', () => {
  let nats: NatsServer;

  beforeAll(async () => {
    nats = await startNatsServer(binary());
    const connection = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(connection);
    // In memory, with NATS's default 2-minute duplicate window: both contradict.
    await jsm.streams.add({ name: 'ORDER_EVENTS', subjects: ['orders.events.>'], storage: StorageType.Memory });
    await connection.close();
  });
  afterAll(async () => nats?.stop());

  it('refuses to start, saying why in one line', async () => {
    const boot = startApp({ dbName: 'test_events_refused', env: { NATS_URL: nats.url } });
    await expect(boot).rejects.toThrow(
      /^NATS stream ORDER_EVENTS cannot take this service's events: its storage is memory, not file .*; its duplicate window is 120 s, shorter than the \d+ s the relay's retries need\. Fix or delete the stream, or set NATS_STREAM\.$/,
    );
  });
});
