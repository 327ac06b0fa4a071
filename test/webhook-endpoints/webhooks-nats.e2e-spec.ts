// Outgoing webhooks on a real nats-server (issue 46 with issue 45's JetStream EventSubscriber): the dispatcher is a
// durable pull consumer of ORDER_EVENTS; two instances share it. Tenant A's endpoint gets A's events, each
// webhook-id once, validly signed, with the CloudEvents body; B's gets only B's; a 500 is retried with the same id.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { EventSubscriber } from '../../src/outbox/event-subscriber.port.js';
import { DeliveryWorkflow } from '../../src/webhook-endpoints/delivery-workflow.js';
import { DISPATCHER_CONSUMER, WebhookDispatcher } from '../../src/webhook-endpoints/webhook-dispatcher.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../../bench/nats-server.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { answer, eventually, Receiver } from './receiver.js';

const found = findNatsServer();
if ('missing' in found) console.warn(`SKIPPED test/webhook-endpoints/webhooks-nats: ${found.missing}`);
const describeNats = 'missing' in found ? describe.skip : describe;

type Tenant = 'acme' | 'globex';

describeNats('outgoing webhooks on JetStream: the dispatcher as a durable pull consumer', () => {
  let nats: NatsServer;
  let t: TestApp;
  let second: TestApp;
  let receivers: Receiver[] = [];
  let seq = 0;

  beforeAll(async () => {
    nats = await startNatsServer((found as { binary: string }).binary);
    const env = {
      NATS_URL: nats.url,
      OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
      OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: '0,300,600',
      OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
    };
    t = await startApp({ dbName: 'test_webhooks_nats', env });
    second = await startApp({ dbName: 'test_webhooks_nats', env, keepData: true });
  });
  beforeEach(async () => {
    for (const name of ['webhook_endpoints', 'webhook_deliveries']) await t.db.collection(name).deleteMany({});
  });
  afterEach(async () => {
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();
    await Promise.all(receivers.map((r) => r.stop()));
    receivers = [];
  });
  afterAll(async () => {
    await second?.close();
    await t?.close();
    await nats?.stop();
  });

  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  const deliveries = () => t.db.collection<{ _id: string; status: string; eventId: string; endpointId: string }>('webhook_deliveries');

  async function endpointFor(r: Receiver, tenant: Tenant): Promise<{ id: string; secret: string }> {
    const res = await t
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth(tenant))
      .set('Idempotency-Key', `we-${++seq}`)
      .send({ url: r.url, events: ['order.completed'] });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, secret: res.body.secret as string };
  }

  /** Orders of `tenant` created on either instance, relayed to the stream by both relays at once; their events. */
  async function orderEvents(tenant: Tenant, count: number): Promise<OutboxEvent[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const app = i % 2 === 0 ? t : second;
      const res = await app.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', `order-${++seq}`).send(orderBody());
      expect(res.status).toBe(201);
      ids.push(res.body.id as string);
    }
    await Promise.all([t.app.get(OutboxRelay).tick(), second.app.get(OutboxRelay).tick()]);
    return t.db
      .collection<OutboxEvent>('outbox_events')
      .find({ aggregateId: { $in: ids }, type: 'order.completed' })
      .toArray();
  }

  it("each tenant's endpoint gets its own events, each webhook-id once, validly signed, with two instances consuming", async () => {
    const [ra, rb] = [await receiver(), await receiver()];
    const a = await endpointFor(ra, 'acme');
    const b = await endpointFor(rb, 'globex');
    const eventsA = await orderEvents('acme', 4);
    const eventsB = await orderEvents('globex', 2);
    await eventually('six deliveries', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 6, 30_000);
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();

    for (const [r, endpoint, events] of [
      [ra, a, eventsA],
      [rb, b, eventsB],
    ] as const) {
      expect(r.received.map((x) => x.headers['webhook-id']).sort()).toEqual(events.map((e) => e._id).sort());
      for (const { headers, body } of r.received) {
        const event = new Webhook(endpoint.secret).verify(body, headers as Record<string, string>) as Record<string, unknown>;
        expect(event).toMatchObject({ specversion: '1.0', id: headers['webhook-id'], type: 'order.completed', tenant: events[0].tenant });
      }
    }
    expect(await deliveries().countDocuments()).toBe(6);
  });

  it('a 500 then a 200: two attempts with the same webhook-id; the deliveries API says succeeded', async () => {
    const r = await receiver();
    r.behaviour = (n, res) => answer(n === 1 ? 500 : 200)(n, res);
    const a = await endpointFor(r, 'acme');
    const [event] = await orderEvents('acme', 1);
    await eventually('the retry', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1, 30_000);
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual([event._id, event._id]);
    const list = await t.http().get(`/v1/webhook-endpoints/${a.id}/deliveries`).set(auth()).expect(200);
    expect(list.body.data[0]).toMatchObject({ eventId: event._id, status: 'succeeded' });
    expect(list.body.data[0].attempts.map((x: { httpStatus: number }) => x.httpStatus)).toEqual([500, 200]);
  });
  it('consumer killed before its ack: JetStream redelivers the event, and no second delivery record appears', async () => {
    const r = await receiver();
    await endpointFor(r, 'acme');
    // Only a consumer that records the batch and dies before acking reads the durable consumer now.
    for (const app of [t, second]) await app.app.get(WebhookDispatcher).onApplicationShutdown();
    let deaths = 0;
    const dying = await t.app.get(EventSubscriber).subscribe(DISPATCHER_CONSUMER, async (batch) => {
      await t.app.get(WebhookDispatcher).record(batch);
      deaths++;
      throw new Error('killed before the ack');
    });
    const [event] = await orderEvents('acme', 1);
    await eventually('the batch recorded, then not acked', () => deaths >= 1);
    await dying.stop();
    expect(await deliveries().countDocuments({ eventId: event._id })).toBe(1);

    // The dispatchers come back: JetStream delivers the event again; the inbox drops it.
    for (const app of [t, second]) app.app.get(WebhookDispatcher).onApplicationBootstrap();
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1, 30_000);
    const duplicates = async () => {
      let total = 0;
      for (const app of [t, second]) {
        const text = await app.app.get(MetricsService).registry.metrics();
        const line = text.split('\n').find((l) => l.startsWith('outgoing_webhook_consumer_redeliveries_total{kind="duplicate"}'));
        total += line ? Number(line.split(' ').pop()) : 0;
      }
      return total;
    };
    await eventually('the redelivery dropped as a duplicate', async () => (await duplicates()) >= 1, 30_000);
    for (const app of [t, second]) await app.app.get(DeliveryWorkflow).settled();
    expect(await deliveries().countDocuments({ eventId: event._id })).toBe(1);
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual([event._id]);
  });
});
