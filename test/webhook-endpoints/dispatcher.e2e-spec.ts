// The dispatcher as a consumer of the stream (issue 46): a redelivered event creates nothing new, two instances
// deliver each event once, one slow endpoint holds up no other, and an endpoint failing for the (scaled) 5 days
// is disabled and says so. In-process bus; the database and loopback receivers are what is asserted.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { inboxId } from '@idempotent-orders/nest-idempotency';
import { toCloudEvent } from '../../src/outbox/cloud-event.js';
import { toPublishedEvent } from '../../src/outbox/event-publisher.port.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { DeliveryWorkflow } from '../../src/webhook-endpoints/delivery-workflow.js';
import { DISPATCHER_CONSUMER, WebhookDispatcher } from '../../src/webhook-endpoints/webhook-dispatcher.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { answer, eventually, Receiver } from './receiver.js';

const ENV = {
  OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
  OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: '0,700,700,700',
  OUTGOING_WEBHOOKS_TIMEOUT_MS: '3000',
  OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
  OUTGOING_WEBHOOKS_DISABLE_AFTER_MS: '1000',
};

describe('outgoing webhooks: the dispatcher on the stream', () => {
  let t: TestApp;
  let second: TestApp;
  let receivers: Receiver[] = [];
  let seq = 0;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_webhook_dispatcher', env: ENV });
    // A second instance on the same database: its own bus, relay, dispatcher and workers.
    second = await startApp({ dbName: 'test_webhook_dispatcher', env: ENV, keepData: true });
  });
  beforeEach(async () => {
    await t.reset();
    for (const name of ['webhook_endpoints', 'webhook_deliveries', 'idempotency_inbox']) await t.db.collection(name).deleteMany({});
  });
  afterEach(async () => {
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();
    await Promise.all(receivers.map((r) => r.stop()));
    receivers = [];
  });
  afterAll(async () => {
    await second.close();
    await t.close();
  });

  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  const deliveries = () => t.db.collection<{ _id: string; status: string; eventId: string }>('webhook_deliveries');
  const metric = async (app: TestApp, name: string) => {
    const text = await app.app.get(MetricsService).registry.metrics();
    return text.split('\n').filter((line) => line.startsWith(name));
  };

  /** A counter's value summed over both instances. */
  const summed = async (series: string) => {
    let total = 0;
    for (const app of [t, second]) for (const line of await metric(app, `${series} `)) total += Number(line.split(' ').pop());
    return total;
  };

  async function endpointFor(r: Receiver, events = ['order.completed']): Promise<string> {
    const res = await t.http().post('/v1/webhook-endpoints').set(auth()).set('Idempotency-Key', `we-${++seq}`).send({ url: r.url, events });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  async function createOrders(count: number, app = t): Promise<void> {
    for (let i = 0; i < count; i++) {
      await app.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `order-${++seq}`).send(orderBody()).expect(201);
    }
  }

  const outboxEvents = () => t.db.collection<OutboxEvent>('outbox_events').find({ type: 'order.completed' }).toArray();

  it('an event delivered again after its batch committed (consumer killed before the ack) creates no second record', async () => {
    const r = await receiver();
    await endpointFor(r);
    await createOrders(1);
    await t.app.get(OutboxRelay).tick();
    const [event] = await outboxEvents();
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);

    // The transport never saw the ack: it delivers the batch again, to this instance and to the other.
    const batch = [{ event: toCloudEvent(toPublishedEvent(event)), redeliveries: 1 }];
    await t.app.get(WebhookDispatcher).record(batch);
    await second.app.get(WebhookDispatcher).record(batch);
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).pass();
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();

    expect(await deliveries().countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_inbox').countDocuments({ _id: inboxId(DISPATCHER_CONSUMER, event._id) as never })).toBe(1);
    expect(r.received).toHaveLength(1);
    expect(await metric(t, 'outgoing_webhook_consumer_redeliveries_total')).toEqual(
      expect.arrayContaining([
        'outgoing_webhook_consumer_redeliveries_total{kind="redelivered"} 1',
        'outgoing_webhook_consumer_redeliveries_total{kind="duplicate"} 1',
      ]),
    );
  });

  it('an event read again after its inbox record expired (a recreated consumer) creates nothing new and holds up no other event', async () => {
    const r = await receiver();
    await endpointFor(r);
    await createOrders(1);
    await t.app.get(OutboxRelay).tick();
    const [old] = await outboxEvents();
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);
    const delivered = await deliveries().findOne({ eventId: old._id });
    // The inbox TTL (30 days) removed the record; deliveries have none. A new consumer re-reads the stream from its start.
    await t.db.collection('idempotency_inbox').deleteMany({});
    await createOrders(1);
    const fresh = (await outboxEvents()).find((event) => event._id !== old._id)!;
    const batch = [old, fresh].map((event) => ({ event: toCloudEvent(toPublishedEvent(event)), redeliveries: 0 }));

    await t.app.get(WebhookDispatcher).record(batch);
    await t.app.get(DeliveryWorkflow).pass();
    await t.app.get(DeliveryWorkflow).settled();

    expect(await deliveries().findOne({ eventId: old._id })).toEqual(delivered);
    expect(await deliveries().countDocuments({ eventId: fresh._id })).toBe(1);
    await eventually('the new event delivered', async () => r.received.length === 2);
    expect(await deliveries().countDocuments()).toBe(2);
  });

  it('two instances consuming and sending: every event reaches the endpoint once', async () => {
    const r = await receiver();
    await endpointFor(r);
    await createOrders(3, t);
    await createOrders(3, second);
    // Both relays race over one outbox; then every event goes to both dispatchers (a shared durable consumer redelivering).
    await Promise.all([t.app.get(OutboxRelay).tick(), second.app.get(OutboxRelay).tick()]);
    const events = await outboxEvents();
    expect(events).toHaveLength(6);
    const batch = events.map((event) => ({ event: toCloudEvent(toPublishedEvent(event)), redeliveries: 1 }));
    await Promise.all([t.app.get(WebhookDispatcher).record(batch), second.app.get(WebhookDispatcher).record(batch)]);
    await eventually('six deliveries', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 6);
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();

    expect(r.received.map((x) => x.headers['webhook-id']).sort()).toEqual(events.map((e) => e._id).sort());
    expect(await deliveries().countDocuments()).toBe(6);
  });

  it('one endpoint that hangs holds up no other', async () => {
    const slow = await receiver();
    slow.behaviour = slow.hang;
    const fast = await receiver();
    await endpointFor(slow);
    await endpointFor(fast);
    await createOrders(3);
    await t.app.get(OutboxRelay).tick();
    const started = Date.now();
    await eventually('the fast endpoint', () => fast.received.length === 3);
    // Long before the slow endpoint's attempts time out (3 s): they never took the fast one's turn.
    expect(Date.now() - started).toBeLessThan(2500);
    expect(slow.received.length).toBeGreaterThanOrEqual(1);
    // Per-endpoint concurrency (2 per instance, two instances here): never all three of its deliveries open on one instance.
    expect(slow.received.length).toBeLessThanOrEqual(4);
  });

  it('an endpoint whose every attempt failed for the (scaled) 5 days is disabled, says why, and gets no more deliveries', async () => {
    const r = await receiver();
    r.behaviour = answer(500);
    const id = await endpointFor(r);
    await createOrders(1);
    await t.app.get(OutboxRelay).tick();
    const endpoint = await eventually('the endpoint disabled', async () => {
      const doc = await t.db.collection('webhook_endpoints').findOne({ _id: id as never });
      return doc?.status === 'disabled' ? doc : undefined;
    });
    expect(endpoint).toMatchObject({ disabledReason: 'failing', disabledAt: expect.any(Date) });
    const view = await t.http().get(`/v1/webhook-endpoints/${id}`).set(auth()).expect(200);
    expect(view.body).toMatchObject({ status: 'disabled', disabledReason: 'failing' });
    // Either instance's workers may have made the attempt that disabled it: the counters of both, summed.
    expect(await summed('outgoing_webhook_endpoints_disabled_total')).toBe(1);

    await eventually('the delivery ended', async () => (await deliveries().findOne({ status: 'failed' })) ?? undefined);
    const attempts = r.received.length;
    await createOrders(1);
    await t.app.get(OutboxRelay).tick();
    await t.app.get(DeliveryWorkflow).pass();
    await t.app.get(DeliveryWorkflow).settled();
    expect(await deliveries().countDocuments()).toBe(1);
    expect(r.received).toHaveLength(attempts);
    expect(await summed('outgoing_webhook_attempts_total{result="http_error"}')).toBe(attempts);
  });
});
