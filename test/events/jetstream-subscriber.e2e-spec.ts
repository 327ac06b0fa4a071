import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { EventPublisher } from '../../src/outbox/event-publisher.port.js';
import { EventSubscriber, type DeliveredEvent, type Subscription } from '../../src/outbox/event-subscriber.port.js';
import { JetStreamBroker } from '../../src/outbox/jetstream.broker.js';
import { JetStreamEventSubscriber } from '../../src/outbox/jetstream.subscriber.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { startApp, type TestApp } from '../support/test-app.js';
import { publishTestEvents } from './test-events.js';

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

  const publishEvents = (count: number) => publishTestEvents(publisher, count);
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
    // One event per batch: a failed batch of several is handed back one event at a time at once (the poison test
    // below), and it is the transport's redelivery, counted by the metric, that this test is about.
    await subscribe(
      'redelivery',
      async (batch) => {
        redelivered += batch.filter((delivered) => delivered.redeliveries > 0).length;
        const mine = batch.filter((delivered) => delivered.event.id === id);
        seen.push(...mine);
        if (mine.length > 0 && failures-- > 0) throw new Error('consumer down');
      },
      1,
    );
    await until(() => seen.length === 2);
    expect(seen.map((delivered) => delivered.redeliveries)).toEqual([0, 1]);
    const metrics = await t.app.get(MetricsService).registry.getSingleMetricAsString('events_consumer_redeliveries_total');
    expect(metrics).toContain(`events_consumer_redeliveries_total{consumer="redelivery"} ${redelivered}`);
    expect(redelivered).toBe(1);
  });

  it('a poison event fails alone: the good events of its batch are handled one at a time and acked, the poison is retried, never dropped', async () => {
    const ids = await publishEvents(5);
    const poison = ids[2];
    const good = ids.filter((id) => id !== poison);
    const succeeded = new Map<string, number>(); // good id -> handler calls that resolved with it
    const seenAfterSuccess: string[] = [];
    const sharedWithPoison = new Set<string>();
    const poisonRedeliveries: number[] = [];
    // Published before the subscription, so they arrive together: the poison shares a batch with good events.
    await subscribe(
      'poison',
      async (batch) => {
        const mine = batch.filter((delivered) => ids.includes(delivered.event.id)).map((delivered) => delivered.event.id);
        seenAfterSuccess.push(...mine.filter((id) => succeeded.has(id)));
        const failing = batch.find((delivered) => delivered.event.id === poison);
        if (failing) {
          poisonRedeliveries.push(failing.redeliveries);
          mine.filter((id) => id !== poison).forEach((id) => sharedWithPoison.add(id));
          throw new Error('poison event');
        }
        for (const id of mine) succeeded.set(id, (succeeded.get(id) ?? 0) + 1);
      },
      100,
    );
    await until(() => good.every((id) => succeeded.has(id)), 10_000);
    expect(sharedWithPoison.size).toBeGreaterThan(0); // the case this test is about happened
    // The poison comes back on its own backoff (1 s, then 2 s), and keeps coming: it is not terminated.
    await until(() => Math.max(...poisonRedeliveries) >= 2, 10_000);
    expect(good.map((id) => succeeded.get(id))).toEqual(good.map(() => 1));
    expect(seenAfterSuccess).toEqual([]); // each good event was acked with its success, not handed again
    const { jsm } = await t.app.get(JetStreamBroker).clients();
    const info = await jsm.consumers.info(t.app.get(JetStreamBroker).stream, 'poison');
    expect(info.num_ack_pending).toBe(1); // the poison, waiting for its next try
    // Counted at each failure, for the alert that sees a poison event (it makes no lag): the good events' one
    // failure each (in the batch's call) is not counted, only the poison's own.
    const failures = await t.app.get(MetricsService).registry.getSingleMetricAsString('events_handler_failures_total');
    const counted = Number(/events_handler_failures_total\{consumer="poison"\} (\d+)/.exec(failures)?.[1]);
    expect(counted).toBeGreaterThanOrEqual(2); // its first two deliveries at least (the third is under way)
    expect(counted).toBeLessThanOrEqual(poisonRedeliveries.length - 1); // not its call in the shared batch
  });

  it('stop() does not wait out a one-at-a-time pass: the events not yet handed go back at once, none acked, none lost', async () => {
    const ids = await publishEvents(5);
    const calls: number[] = []; // the size of each batch handed, for this test's events
    let passStarted!: () => void;
    const started = new Promise<void>((resolve) => (passStarted = resolve));
    // Every call fails, slowly, as during a store outage: the pass would make 5 more calls after the batch's.
    const subscription = await subscribe(
      'stop-mid-pass',
      async (batch) => {
        const mine = batch.filter((delivered) => ids.includes(delivered.event.id));
        if (mine.length === 0) return;
        calls.push(mine.length);
        if (mine.length === 1) passStarted();
        await sleep(200);
        throw new Error('store unavailable');
      },
      100,
    );
    await started;
    await subscription.stop();
    expect(calls[0]).toBeGreaterThan(1); // the case this test is about: a batch, then the pass
    expect(calls.slice(1)).toEqual([1]); // the call under way finished; the pass went no further
    // The next reader under the name gets every event: none was acked by the failing calls, none dropped.
    const again = new Set<string>();
    await subscribe('stop-mid-pass', async (batch) => {
      batch.forEach((delivered) => again.add(delivered.event.id));
    });
    // At once, or after the 30 s ack wait for an event whose redelivery met the stopped reader's last pull.
    await until(() => ids.every((id) => again.has(id)), 45_000);
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
