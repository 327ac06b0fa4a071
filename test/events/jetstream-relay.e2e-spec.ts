import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Clock } from '../../src/common/clock.js';
import { outboxConfig, type OutboxConfig } from '../../src/config/config.tokens.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { EventPublisher } from '../../src/outbox/event-publisher.port.js';
import { JetStreamEventPublisher } from '../../src/outbox/jetstream.publisher.js';
import { OutboxEventRepository } from '../../src/outbox/outbox-event.repository.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { addStream, deleteStream, readStream, streamConfig } from './stream-reader.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/events/jetstream-relay: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

describeNats('outbox relay on a real nats-server (JetStream)', () => {
  let nats: NatsServer;
  let t: TestApp;
  let relay: OutboxRelay;

  beforeAll(async () => {
    nats = await startNatsServer((found as { binary: string }).binary);
    t = await startApp({ dbName: 'test_events_jetstream', env: { NATS_URL: nats.url, OUTBOX_PUBLISH_TIMEOUT_MS: '1000' } });
    relay = t.app.get(OutboxRelay);
  });
  beforeEach(async () => {
    await t.reset();
  });
  afterAll(async () => {
    await t?.close();
    await nats?.stop();
  });

  const outbox = () => t.db.collection<{ _id: string; status: string; sequence?: number; type: string; attempts: number }>('outbox_events');
  const create = async (key: string) =>
    (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody()).expect(201)).body as { id: string };
  const refund = (orderId: string, key: string, amountMinor = 500) =>
    t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', key)
      .send({ amountMinor, reason: 'requested_by_customer' })
      .expect(201);
  /** The stream's messages for this test's events only (the stream outlives t.reset()). */
  const inStream = async () => {
    const ids = new Set((await outbox().find({}).toArray()).map((event) => event._id));
    return (await readStream(nats.url)).filter((message) => ids.has(message.event.id));
  };

  it('uses JetStream when NATS_URL is set, and created the stream with the derived duplicate window', async () => {
    expect(t.app.get(EventPublisher)).toBeInstanceOf(JetStreamEventPublisher);
    const config = await streamConfig(nats.url);
    expect(config).toMatchObject({ name: 'ORDER_EVENTS', subjects: ['orders.events.>'], storage: 'file', num_replicas: 1 });
    // Here: max(1 s timeout + 300 s backoff cap, 2 x 1 s) + the tests' 1 h relay interval + 60 s slack, in ns.
    expect(config.duplicate_window).toBe((1000 + 300_000 + 3_600_000 + 60_000) * 1e6);
  });

  it('created orders: exactly one message per event, CloudEvents envelope, Nats-Msg-Id = id, subject = order id', async () => {
    const orders = [await create('k-one-1'), await create('k-one-2'), await create('k-one-3')];
    expect(await relay.tick()).toBe(3);
    expect(await outbox().countDocuments({ status: 'published' })).toBe(3);

    const messages = await inStream();
    expect(messages).toHaveLength(3);
    for (const order of orders) {
      const message = messages.find((candidate) => candidate.event.subject === order.id)!;
      expect(message.subject).toBe('orders.events.order.completed');
      expect(message.msgId).toBe(`evt_${order.id}_completed`);
      expect(message.contentType).toBe('application/cloudevents+json');
      expect(message.event).toEqual({
        specversion: '1.0',
        id: `evt_${order.id}_completed`,
        source: '/idempotent-orders',
        type: 'order.completed',
        subject: order.id,
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        datacontenttype: 'application/json',
        tenant: 'acme',
        schemaversion: 2,
        sequence: '1',
        data: expect.objectContaining({ id: order.id, state: 'saved', amountMinor: 2500 }),
      });
    }
  });

  it('an event published again (a relay died before its mark) is dropped by the stream, and counts as published', async () => {
    await create('k-again');
    expect(await relay.tick()).toBe(1);
    // What a relay killed between the broker's ack and its mark leaves behind.
    await outbox().updateMany({}, { $set: { status: 'pending', availableAt: new Date(0) } });
    expect(await relay.tick()).toBe(1);
    expect(await outbox().countDocuments({ status: 'published', attempts: 2 })).toBe(1);
    expect(await inStream()).toHaveLength(1);
  });

  it("keeps one order's events in commit order after a failed publish, and numbers them", async () => {
    const { id } = await create('k-order');
    await refund(id, 'r-order');
    expect(await outbox().countDocuments({})).toBe(2);

    await nats.kill();
    expect(await relay.tick()).toBe(0); // order.completed fails; order.refunded is due but waits behind it
    const afterFailure = await outbox().find({}).sort({ sequence: 1 }).toArray();
    expect(afterFailure.map((event) => [event.type, event.sequence, event.attempts])).toEqual([
      ['order.completed', 1, 1],
      ['order.refunded', 2, 0],
    ]);

    await nats.start();
    await outbox().updateMany({}, { $set: { availableAt: new Date(0) } }); // skip the backoff
    await until(async () => {
      await relay.tick();
      return (await outbox().countDocuments({ status: 'published' })) === 2;
    });
    const messages = await inStream();
    expect(messages.map((message) => [message.event.type, message.event.sequence])).toEqual([
      ['order.completed', '1'],
      ['order.refunded', '2'],
    ]);
  });

  it('two relays racing on one outbox: each event in the stream once, each order in sequence', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await create(`k-race-${i}`)).id);
    for (const id of ids) await refund(id, `r-race-${id}`);
    const another = new OutboxRelay(
      t.app.get(OutboxEventRepository),
      t.app.get(EventPublisher),
      t.app.get(MetricsService),
      t.app.get(Clock),
      { ...t.app.get<OutboxConfig>(outboxConfig.KEY), batchSize: 3 },
    );
    await until(async () => {
      await Promise.all([relay.tick(), another.tick()]);
      return (await outbox().countDocuments({ status: 'published' })) === 8;
    });
    const messages = await inStream();
    expect(messages).toHaveLength(8);
    expect(new Set(messages.map((message) => message.msgId)).size).toBe(8);
    for (const id of ids) {
      expect(messages.filter((message) => message.event.subject === id).map((message) => message.event.sequence)).toEqual(['1', '2']);
    }
  });

  it('a stream deleted while the service runs is made again by the next publish, as at boot: no restart, no event lost', async () => {
    const before = await streamConfig(nats.url);
    await deleteStream(nats.url);
    const order = await create('k-stream-gone');
    expect(await relay.tick()).toBe(0); // nobody answered the publish: the event waits, and the stream is checked again
    await until(async () => (await streamConfig(nats.url).catch(() => null)) !== null);
    expect(await streamConfig(nats.url)).toMatchObject({
      name: before.name,
      subjects: before.subjects,
      storage: before.storage,
      duplicate_window: before.duplicate_window,
    });
    await outbox().updateMany({}, { $set: { availableAt: new Date(0) } }); // past the failed publish's backoff
    await until(async () => (await relay.tick()) === 1);
    expect((await inStream()).map((message) => message.msgId)).toEqual([`evt_${order.id}_completed`]);
    expect(await outbox().countDocuments({ status: 'published' })).toBe(1);
  });

  it('a stream replaced by one that cannot take our events is refused at the next publish (health: degraded); once put right, it is ours again', async () => {
    const degraded = async () =>
      ((await t.http().get('/health/ready').expect(200)).body as { info: { events: { degraded: boolean } } }).info.events.degraded;
    await deleteStream(nats.url);
    await addStream(nats.url, 'ORDER_EVENTS', ['elsewhere.>']);
    await create('k-stream-refused');
    expect(await relay.tick()).toBe(0); // nobody answered: the stream is checked again, and refused
    await until(degraded);
    await deleteStream(nats.url); // the operator puts it right: the next publish makes it as at boot
    await until(async () => {
      await outbox().updateMany({}, { $set: { availableAt: new Date(0) } }); // past each failed publish's backoff
      return (await relay.tick()) === 1;
    });
    expect(await degraded()).toBe(false);
    expect(await streamConfig(nats.url)).toMatchObject({ subjects: ['orders.events.>'] });
  });
});

async function until(done: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
