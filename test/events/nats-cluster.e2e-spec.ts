/**
 * The production shape docs/scaling.md asks for: a 3-node JetStream cluster,
 * NATS_STREAM_REPLICAS=3, NATS_URL listing the seeds. Real nats-servers on
 * loopback; nodes are SIGKILLed (the one the service talks to, then the
 * stream's leader) while orders are created, and every event must reach the
 * stream once and the webhook dispatcher's durable consumer once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamBroker } from '../../src/outbox/jetstream.broker.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { findNatsServer, startNatsCluster, type NatsCluster, type NatsServer } from '../../bench/nats-server.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { readStream } from './stream-reader.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/events/nats-cluster: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeNats('a 3-node NATS cluster, stream replicas 3 (real nats-servers, nodes SIGKILLed)', () => {
  let cluster: NatsCluster;
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    cluster = await startNatsCluster((found as { binary: string }).binary, 3);
    t = await startApp({
      dbName: 'test_events_cluster',
      env: { NATS_URL: cluster.urls, NATS_STREAM_REPLICAS: '3', OUTBOX_PUBLISH_TIMEOUT_MS: '2000' },
    });
    relay = t.app.get(OutboxRelay);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await cluster?.stop();
  });

  const outbox = () => t.db.collection<{ _id: string; status: string }>('outbox_events');
  const inbox = () => t.db.collection<{ _id: string }>('idempotency_inbox');
  const create = async (key: string) =>
    expect((await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody())).status).toBe(201);
  const up = () => cluster.nodes.filter((node) => !down.has(node));
  const down = new Set<NatsServer>();
  const kill = async (node: NatsServer) => {
    down.add(node);
    await node.kill();
  };
  const node = (name: string) => cluster.nodes[Number(name.slice(1)) - 1];

  /** The stream as a node that is up reports it. */
  const streamInfo = async (): Promise<StreamInfo> => {
    return answered(async () => {
      const connection = await connect({ servers: up().map((n) => n.url), reconnect: false });
      try {
        return await (await jetstreamManager(connection, { timeout: 2000 })).streams.info('ORDER_EVENTS');
      } finally {
        await connection.close();
      }
    });
  };
  /** The node the service's own connection is on (the client picks a seed at random and fails over). */
  const serviceNode = async () => {
    const { js } = await t.app.get(JetStreamBroker).clients();
    const name = (js as unknown as { nc: NatsConnection }).nc.info?.server_name;
    if (!name) throw new Error('the service is not connected');
    return node(name);
  };
  /** Relays until no event is pending and the dispatcher recorded each: every event on the stream, each consumed. */
  const drain = async (timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ids = (await outbox().find({}).toArray()).map((event) => `webhook-dispatcher:${event._id}`);
      const pending = await outbox().countDocuments({ status: 'pending' });
      const consumed = await inbox().countDocuments({ _id: { $in: ids } });
      if (pending === 0 && consumed === ids.length) return;
      if (Date.now() > deadline)
        throw new Error(`not drained within ${timeoutMs} ms: ${pending} pending, ${consumed} of ${ids.length} consumed`);
      await outbox().updateMany({ status: 'pending' }, { $set: { availableAt: new Date(0) } }); // skip the backoff
      await relay.tick();
      await sleep(250);
    }
  };
  /** Every outbox event on the stream exactly once, read from a node that is up (once the cluster answers its API again). */
  const expectEachEventOnce = async () => {
    const ids = (await outbox().find({}).toArray()).map((event) => event._id).sort();
    const messages = await answered(() => readStream(up()[0].url));
    expect(messages.map((message) => message.msgId).sort()).toEqual(ids);
    return ids.length;
  };
  /** JetStream's API times out while the cluster elects a new meta leader after a kill (a few seconds): ask again. */
  const answered = async <T>(ask: () => Promise<T>, timeoutMs = 30_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await ask();
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(250);
      }
    }
  };

  it('creates the stream with three replicas, a leader and two current followers', async () => {
    await create('cluster-0');
    await drain();
    const info = await streamInfo();
    expect(info.config.num_replicas).toBe(3);
    expect(info.cluster?.leader).toMatch(/^n[123]$/);
    expect(info.cluster?.replicas?.map((replica) => replica.current)).toEqual([true, true]);
  });

  it('the node the service talks to dies, then the stream leader: creates go on, every event on the stream once, each consumed once', async () => {
    for (let i = 1; i <= 3; i++) await create(`cluster-a-${i}`);
    await drain();

    // The service's own node: its connection fails over to another seed; the relay's unacked publish is retried.
    const first = await serviceNode();
    await kill(first);
    for (let i = 1; i <= 3; i++) await create(`cluster-b-${i}`);
    await drain();
    expect(up()).toContain(await serviceNode()); // failed over to a live seed
    expect(await expectEachEventOnce()).toBe(7);

    // Back on its store, it catches up; then the stream's leader dies (a quorum of 2 remains).
    down.delete(first);
    await first.start();
    const deadline = Date.now() + 30_000;
    while (!(await streamInfo()).cluster?.replicas?.every((replica) => replica.current && !replica.offline)) {
      if (Date.now() > deadline) throw new Error('the restarted node did not catch up within 30 s');
      await sleep(250);
    }
    const leader = node((await streamInfo()).cluster!.leader!);
    await kill(leader);
    for (let i = 1; i <= 3; i++) await create(`cluster-c-${i}`);
    await drain();
    const after = await streamInfo();
    expect(after.cluster?.leader).not.toBe(`n${cluster.nodes.indexOf(leader) + 1}`); // a new leader took over
    expect(up().map((n) => `n${cluster.nodes.indexOf(n) + 1}`)).toContain(after.cluster?.leader);
    expect(await expectEachEventOnce()).toBe(10);
    expect(after.state.messages).toBe(10);
  }, 180_000);

  it('boots connected while a listed seed is down: the client takes the next seed, not the degraded start', async () => {
    expect(down.size).toBe(1); // the last test's leader is still down
    const second = await startApp({
      dbName: 'test_events_cluster_seeds',
      env: { NATS_URL: cluster.urls, NATS_STREAM_REPLICAS: '3', OUTBOX_PUBLISH_TIMEOUT_MS: '2000', NATS_CONNECT_WAIT_MS: '5000' },
    });
    try {
      const ready = await second.http().get('/health/ready');
      expect(ready.body.info.events).toEqual({ status: 'up', transport: 'jetstream', degraded: false });
    } finally {
      await second.close();
    }
  }, 60_000);
});
