import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { EventPublisher, LogEventPublisher, type PublishedEvent } from '../../src/outbox/event-publisher.port.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** A broker that can be made to fail. */
class FlakyPublisher extends LogEventPublisher {
  failing = false;
  override async publish(event: PublishedEvent): Promise<void> {
    if (this.failing) throw new Error('broker unavailable');
    await super.publish(event);
  }
}

describe('outbox relay and metrics', () => {
  let t: TestApp;
  let publisher: FlakyPublisher;
  let relay: OutboxRelay;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_outbox',
      override: (builder) => builder.overrideProvider(EventPublisher).useClass(FlakyPublisher),
    });
    publisher = t.app.get(EventPublisher) as FlakyPublisher;
    relay = t.app.get(OutboxRelay);
  });
  beforeEach(async () => {
    await t.reset();
    publisher.failing = false;
  });
  afterAll(async () => t.close());

  const create = (key: string) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody()).expect(201);

  it('publishes order.completed once, with the event id for consumer deduplication, and marks it published', async () => {
    const received: PublishedEvent[] = [];
    publisher.emitter.on('order.completed', (event: PublishedEvent) => received.push(event));
    const order = (await create('k-evt')).body;

    expect(await relay.tick()).toBe(1);
    expect(await relay.tick()).toBe(0);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ id: `evt_${order.id}_completed`, type: 'order.completed', tenant: 'acme' });
    expect(received[0].payload).toMatchObject({ id: order.id, amountMinor: 2500, state: 'saved' });
    const stored = await t.db.collection('outbox_events').findOne({});
    expect(stored).toMatchObject({ status: 'published', attempts: 1 });
    expect(stored!.publishedAt).toBeInstanceOf(Date);
  });

  it('backs off after a failed publish and delivers once the broker is back', async () => {
    await create('k-evt-fail');
    publisher.failing = true;
    expect(await relay.tick()).toBe(0);
    const failed = await t.db.collection('outbox_events').findOne({});
    expect(failed).toMatchObject({ status: 'pending', attempts: 1, lastError: 'broker unavailable' });
    expect(failed!.availableAt.getTime()).toBeGreaterThan(Date.now());

    publisher.failing = false;
    expect(await relay.tick()).toBe(0); // not due yet: the backoff holds
    await t.db.collection('outbox_events').updateOne({}, { $set: { availableAt: new Date() } });
    expect(await relay.tick()).toBe(1);
    expect(await t.db.collection('outbox_events').findOne({})).toMatchObject({ status: 'published', attempts: 2 });
    const metrics = (await t.http().get('/metrics')).text;
    expect(metrics).toMatch(/outbox_publish_failures_total\{type="order.completed"\} 1/);
    expect(metrics).toMatch(/outbox_backlog 0/);
  });

  it('exports idempotency outcomes, store latency and request counts by route template', async () => {
    const before = (await t.http().get('/metrics')).text;
    const count = (text: string, series: string) =>
      Number(new RegExp(`^${series.replace(/[{}".]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    await create('k-m1');
    await create('k-m1');
    await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-m1')
      .send(orderBody({ customerId: 'x' }))
      .expect(422);
    const metrics = (await t.http().get('/metrics').expect(200)).text;
    for (const outcome of ['claimed', 'replayed', 'payload_mismatch']) {
      const series = `idempotency_requests_total{operation="orders.create",outcome="${outcome}"}`;
      expect(count(metrics, series) - count(before, series)).toBe(1);
    }
    const created = 'http_requests_total{route="/v1/orders",method="POST",status="201"}';
    expect(count(metrics, created) - count(before, created)).toBe(2);
    // Deltas of this test's own requests: the counters are cumulative over the file.
    const claims = 'idempotency_store_duration_seconds_count{operation="claim"}';
    expect(count(metrics, claims) - count(before, claims)).toBe(1);
    // Exported, and 0: the README says it must stay 0 (a duplicate creation pages).
    expect(metrics).toMatch(/^# TYPE idempotency_duplicate_creations_total counter$/m);
    expect(metrics).not.toMatch(/^idempotency_duplicate_creations_total\S* [1-9]/m);
    expect(metrics).not.toMatch(/k-m1/);
  });
});
