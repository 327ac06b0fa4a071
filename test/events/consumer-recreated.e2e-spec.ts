import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { EventPublisher } from '../../src/outbox/event-publisher.port.js';
import { EventSubscriber, type DeliveredEvent, type Subscription } from '../../src/outbox/event-subscriber.port.js';
import { JetStreamBroker } from '../../src/outbox/jetstream.broker.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { startApp, type TestApp } from '../support/test-app.js';
import { publishTestEvents } from './test-events.js';

/*
 * A durable consumer deleted under a running subscriber (an operator's `nats consumer rm`, or the stream deleted
 * and created again): the library reports it and pulls on from nothing. The subscriber recreates the consumer as
 * it first created it and reads on; before, nothing was delivered again until a restart.
 */

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/events/consumer-recreated: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeNats('JetStream subscriber: a deleted durable consumer is recreated', () => {
  let nats: NatsServer;
  let t: TestApp;
  let broker: JetStreamBroker;
  const running: Subscription[] = [];

  beforeAll(async () => {
    nats = await startNatsServer((found as { binary: string }).binary);
    t = await startApp({ dbName: 'test_events_consumer_recreated', env: { NATS_URL: nats.url } });
    broker = t.app.get(JetStreamBroker);
  });
  afterAll(async () => {
    for (const subscription of running) await subscription.stop();
    await t?.close();
    await nats?.stop();
  });

  const publishEvents = (count: number) => publishTestEvents(t.app.get(EventPublisher), count);
  /** Subscribes under `consumer`; the ids of every event handed to it, in order. */
  const subscribe = async (consumer: string): Promise<string[]> => {
    const handled: string[] = [];
    const handle = async (batch: DeliveredEvent[]) => {
      handled.push(...batch.map((delivered) => delivered.event.id));
    };
    running.push(await t.app.get(EventSubscriber).subscribe(consumer, handle));
    return handled;
  };
  const until = async (what: string, done: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
      await sleep(50);
    }
  };
  const recreations = async (consumer: string) => {
    const text = await t.app.get(MetricsService).registry.metrics();
    const line = new RegExp(`events_consumer_recreated_total\\{consumer="${consumer}"\\} (\\d+)`).exec(text);
    return line ? Number(line[1]) : 0;
  };

  it('an operator deletes the consumer: it is recreated, events published after it are handled, and the metric counts it', async () => {
    const handled = await subscribe('deleted-by-operator');
    const before = await publishEvents(2);
    await until('the first events', () => before.every((id) => handled.includes(id)), 5_000);
    expect(await recreations('deleted-by-operator')).toBe(0);

    const { jsm } = await broker.clients();
    await jsm.consumers.delete(broker.stream, 'deleted-by-operator');
    const after = await publishEvents(3);
    await until('the events published after the delete', () => after.every((id) => handled.includes(id)), 15_000);
    expect(await recreations('deleted-by-operator')).toBe(1);
    // Recreated as first created: it reads the stream from its start, so the earlier events come again (consumers
    // deduplicate on the event id).
    expect(handled.filter((id) => before.includes(id)).length).toBe(4);
    const info = await jsm.consumers.info(broker.stream, 'deleted-by-operator');
    expect(info.config).toMatchObject({ durable_name: 'deleted-by-operator', ack_policy: 'explicit', deliver_policy: 'all' });
  });

  it('the stream is deleted and created again: the consumer comes back once it can, and later events arrive', async () => {
    const handled = await subscribe('stream-recreated');
    const before = await publishEvents(1);
    await until('the first event', () => before.every((id) => handled.includes(id)), 5_000);

    const { jsm } = await broker.clients();
    const { config } = await jsm.streams.info(broker.stream);
    await jsm.streams.delete(broker.stream);
    // Gone for a while: the consumer cannot be created meanwhile, and the subscriber keeps trying.
    await sleep(1500);
    await jsm.streams.add(config);
    const after = await publishEvents(2);
    await until('the events published into the new stream', () => after.every((id) => handled.includes(id)), 20_000);
    expect(await recreations('stream-recreated')).toBe(1);
    // It was tried while the stream was gone (the API's "stream not found"), and came back on a later try.
    expect(await t.app.get(MetricsService).registry.metrics()).toMatch(
      /jetstream_errors_total\{operation="consumer_create",code="10059"\} [1-9]/,
    );
  });

  it('a subscription stopped while its stream is gone stops at once, not after the backoff', async () => {
    const handled = await subscribe('stopped-while-lost');
    const [event] = await publishEvents(1);
    await until('the event', () => handled.includes(event), 5_000);
    const { jsm } = await broker.clients();
    const { config } = await jsm.streams.info(broker.stream);
    await jsm.streams.delete(broker.stream);
    try {
      await sleep(4000); // three tries in (at 0, 1 and 3 s): waiting out the 4 s backoff
      const stopping = Date.now();
      await running.pop()!.stop();
      expect(Date.now() - stopping).toBeLessThan(1000);
    } finally {
      await jsm.streams.add(config);
    }
  });
});
