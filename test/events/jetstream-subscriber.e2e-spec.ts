import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { EventPublisher, type PublishedEvent } from '../../src/outbox/event-publisher.port.js';
import { EventSubscriber, type DeliveredEvent, type Subscription } from '../../src/outbox/event-subscriber.port.js';
import { JetStreamEventSubscriber } from '../../src/outbox/jetstream.subscriber.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { startApp, type TestApp } from '../support/test-app.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/events/jetstream-subscriber: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeNats('EventSubscriber on a real nats-server: durable pull consumer, explicit ack', () => {
  let nats: NatsServer;
  let t: TestApp;
  let publisher: EventPublisher;
  let subscriber: EventSubscriber;
  const running: Subscription[] = [];

  beforeAll(async () => {
    nats = await startNatsServer((found as { binary: string }).binary);
    t = await startApp({ dbName: 'test_events_subscriber', env: { NATS_URL: nats.url } });
    publisher = t.app.get(EventPublisher);
    subscriber = t.app.get(EventSubscriber);
  });
  afterAll(async () => {
    for (const subscription of running) await subscription.stop();
    await t?.close();
    await nats?.stop();
  });

  /** Publishes `count` events of a test's own, through the service's publisher; returns their ids. */
  const publishEvents = async (count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const event: PublishedEvent = {
        id: `evt_${randomUUID()}`,
        type: 'order.completed',
        tenant: 'acme',
        aggregateId: `ord_${i}`,
        schemaVersion: 2,
        sequence: 1,
        payload: { id: `ord_${i}` },
        occurredAt: new Date().toISOString(),
      };
      await publisher.publish(event);
      ids.push(event.id);
    }
    return ids;
  };
  const subscribe = async (
    consumer: string,
    handle: (batch: DeliveredEvent[]) => Promise<void>,
    maxBatch?: number,
    pendingRefreshMs?: number,
  ) => {
    const subscription = await subscriber.subscribe(consumer, handle, { maxBatch, pendingRefreshMs });
    running.push(subscription);
    return subscription;
  };
  const until = async (done: () => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error('condition not reached in time');
      await sleep(50);
    }
  };

  it('is the JetStream subscriber when NATS_URL is set', () => {
    expect(subscriber).toBeInstanceOf(JetStreamEventSubscriber);
  });

  it('hands batches of at most maxBatch; acked events are not delivered again under the same durable name', async () => {
    const ids = await publishEvents(7);
    const batches: DeliveredEvent[][] = [];
    const first = await subscribe(
      'batches',
      async (batch) => {
        batches.push(batch);
      },
      3,
    );
    await until(() => batches.flat().filter((delivered) => ids.includes(delivered.event.id)).length === 7);
    expect(Math.max(...batches.map((batch) => batch.length))).toBeLessThanOrEqual(3);
    expect(batches[0]).toHaveLength(3); // what had arrived is handed together
    expect(batches.flat().every((delivered) => delivered.redeliveries === 0)).toBe(true);
    expect(batches.flat()[0].event).toMatchObject({ specversion: '1.0', type: 'order.completed', schemaversion: 2, sequence: '1' });
    await first.stop();

    const again: DeliveredEvent[] = [];
    await subscribe('batches', async (batch) => {
      again.push(...batch);
    });
    await sleep(1500);
    expect(again.filter((delivered) => ids.includes(delivered.event.id))).toEqual([]);
  });

  it('redelivers a batch whose handler threw, and says how many times it was delivered before', async () => {
    const [id] = await publishEvents(1);
    const seen: DeliveredEvent[] = [];
    let failures = 1;
    let redelivered = 0;
    await subscribe('redelivery', async (batch) => {
      redelivered += batch.filter((delivered) => delivered.redeliveries > 0).length;
      const mine = batch.filter((delivered) => delivered.event.id === id);
      seen.push(...mine);
      if (mine.length > 0 && failures-- > 0) throw new Error('consumer down');
    });
    await until(() => seen.length === 2);
    expect(seen.map((delivered) => delivered.redeliveries)).toEqual([0, 1]);
    const metrics = await t.app.get(MetricsService).registry.getSingleMetricAsString('events_consumer_redeliveries_total');
    // The whole failed batch came again (the events earlier tests published too): the counter counts each.
    expect(metrics).toContain(`events_consumer_redeliveries_total{consumer="redelivery"} ${redelivered}`);
    expect(redelivered).toBeGreaterThan(0);
  });

  it('keeps events_consumer_pending rising while a handler hangs (read from the consumer, not only at deliveries), so the lag alert can fire', async () => {
    const pending = async () => {
      const text = await t.app.get(MetricsService).registry.getSingleMetricAsString('events_consumer_pending');
      const line = /events_consumer_pending\{consumer="stuck"\} (\d+)/.exec(text);
      return line ? Number(line[1]) : null;
    };
    const before = await publishEvents(3);
    let release!: () => void;
    const hung = new Promise<void>((resolve) => (release = resolve));
    const handed: string[] = [];
    try {
      await subscribe(
        'stuck',
        async (batch) => {
          handed.push(...batch.map((delivered) => delivered.event.id));
          await hung;
        },
        1,
        100,
      );
      await until(() => handed.length === 1);
      await sleep(300);
      const stuckAt = (await pending())!;
      expect(stuckAt).toBeGreaterThanOrEqual(1);
      // Five more while the handler hangs: no delivery happens, yet the gauge follows the backlog (a message the
      // client had already pulled is not pending at the broker: at most one of the five).
      const after = await publishEvents(5);
      const deadline = Date.now() + 10_000;
      while (((await pending()) ?? 0) < stuckAt + 4 && Date.now() < deadline) await sleep(50);
      expect(await pending()).toBeGreaterThanOrEqual(stuckAt + 4);
      release();
      await until(() => [...before, ...after].every((id) => handed.includes(id)));
      const drained = Date.now() + 10_000;
      while ((await pending()) !== 0 && Date.now() < drained) await sleep(50);
      expect(await pending()).toBe(0);
    } finally {
      release();
    }
  });

  it('two instances under one durable name share the work: each event to one of them', async () => {
    const ids = await publishEvents(30);
    const byInstance: string[][] = [[], []];
    for (const instance of [0, 1]) {
      await subscribe(
        'shared',
        async (batch) => {
          byInstance[instance].push(...batch.map((delivered) => delivered.event.id).filter((id) => ids.includes(id)));
          await sleep(20); // each batch takes a while, so both instances get some
        },
        2,
      );
    }
    await until(() => byInstance[0].length + byInstance[1].length >= 30);
    await sleep(500);
    expect([...byInstance[0], ...byInstance[1]].sort()).toEqual([...ids].sort());
    expect(byInstance[0].length).toBeGreaterThan(0);
    expect(byInstance[1].length).toBeGreaterThan(0);
  });
});
