import { describe, expect, it } from '@jest/globals';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { MetricsService } from '../metrics/metrics.service.js';
import type { DeliveredEvent } from './event-subscriber.port.js';
import type { JetStreamBroker } from './jetstream.broker.js';
import { JetStreamEventSubscriber } from './jetstream.subscriber.js';

/*
 * The one path of the subscriber a real nats-server would not take on demand: the library ending a reading with an
 * error (a refused pull, a connection closed under it) instead of ending it or reporting a status. The tests on a
 * real broker (test/events/) cover the rest. Here the library's surface is played by the test: a reading whose
 * iterator throws, then a second reading with one event.
 */

/** A message as the library hands it: JSON data, its delivery count, and what the subscriber did with it. */
function message(id: string, settled: string[]): JsMsg {
  return {
    subject: 'orders.events.order.completed',
    seq: 1,
    info: { deliveryCount: 1, pending: 0 },
    json: () => ({ id, type: 'order.completed', tenant: 'acme', time: new Date().toISOString(), data: {} }),
    ack: () => settled.push(`ack ${id}`),
    nak: () => settled.push(`nak ${id}`),
    term: () => settled.push(`term ${id}`),
    working: () => undefined,
  } as unknown as JsMsg;
}

/** A reading of the consumer: yields `messages`, then throws `error` (if any), or else waits until stopped. */
function reading(messages: JsMsg[], error?: Error): ConsumerMessages & { stopped: boolean } {
  let release: () => void = () => undefined;
  const stoppedOnce = new Promise<void>((resolve) => (release = resolve));
  const self = {
    stopped: false,
    stop: () => {
      self.stopped = true;
      release();
    },
    // No status report ever comes (the consumer is not lost); the stream of reports ends with the reading.
    status: () => ({
      [Symbol.asyncIterator]: () => ({ next: async () => (await stoppedOnce, { done: true as const, value: undefined }) }),
    }),
    [Symbol.asyncIterator]: async function* () {
      yield* messages;
      if (error) throw error;
      await stoppedOnce;
    },
  };
  return self as unknown as ConsumerMessages & { stopped: boolean };
}

describe('JetStreamEventSubscriber', () => {
  it('reads the consumer again after the library ends a reading with an error, and delivers what comes next', async () => {
    const settled: string[] = [];
    const readings = [reading([message('evt_1', settled)], new Error('pull refused')), reading([message('evt_2', settled)])];
    let consumed = 0;
    const infos: string[] = [];
    const broker = {
      stream: 'ORDER_EVENTS',
      clients: async () => ({
        jsm: {
          consumers: {
            // The consumer is there each time it is asked for: the read failed, the consumer was not lost.
            info: async (stream: string, name: string) => (infos.push(`${stream}/${name}`), { num_pending: 0 }),
            add: async () => {
              throw new Error('not expected: the consumer exists');
            },
          },
        },
        js: { consumers: { get: async () => ({ consume: async () => readings[consumed++] }) } },
      }),
    } as unknown as JetStreamBroker;
    const metrics = new MetricsService();
    const subscriber = new JetStreamEventSubscriber(broker, metrics);

    const handled: string[] = [];
    let second: () => void = () => undefined;
    const secondHandled = new Promise<void>((resolve) => (second = resolve));
    const subscription = await subscriber.subscribe(
      'webhook-dispatcher',
      async (batch: DeliveredEvent[]) => {
        handled.push(...batch.map(({ event }) => event.id));
        if (handled.includes('evt_2')) second();
      },
      { pendingRefreshMs: 3_600_000 },
    );

    // The first reading's event is handled, then its error ends it; after a 1 s backoff the consumer is read again.
    const gaveUp = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('evt_2 never handled: the consumer was not read again')), 10_000).unref(),
    );
    await Promise.race([secondHandled, gaveUp]);
    await subscription.stop();

    expect(handled).toEqual(['evt_1', 'evt_2']);
    expect(settled).toEqual(['ack evt_1', 'ack evt_2']);
    expect(consumed).toBe(2);
    expect(readings[0].stopped).toBe(true);
    expect(infos).toEqual(['ORDER_EVENTS/webhook-dispatcher', 'ORDER_EVENTS/webhook-dispatcher']);
    // Not counted as a recreation: the consumer was found, not created again.
    expect((await metrics.eventsConsumerRecreated.get()).values).toEqual([]);
  });
});
