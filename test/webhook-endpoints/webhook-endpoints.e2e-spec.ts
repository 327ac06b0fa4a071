// Outgoing webhooks (issue 46) on the in-process bus: the endpoints API, the dispatcher's delivery records, signed
// deliveries to loopback receivers, retries with the same webhook-id, the limits of one attempt, tenant isolation.
// Every test checks the database (endpoints, deliveries, the inbox) and what the receivers got.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { OpenAPIV3 } from 'openapi-types';
import type { Response } from 'supertest';
import { Webhook } from 'standardwebhooks';
import { inboxId } from '@idempotent-orders/nest-idempotency';
import { toCloudEvent } from '../../src/outbox/cloud-event.js';
import { LogEventPublisher, toPublishedEvent, EventPublisher } from '../../src/outbox/event-publisher.port.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { DeliveryWorkflow } from '../../src/webhook-endpoints/delivery-workflow.js';
import { DISPATCHER_CONSUMER, WebhookDispatcher } from '../../src/webhook-endpoints/webhook-dispatcher.js';
import { onEmulator } from '../support/backend.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { answer, eventually, Receiver } from './receiver.js';

type Tenant = 'acme' | 'globex';
const TIMEOUT_MS = 1500;

describe('outgoing webhooks: endpoints, signed deliveries, retries (in-process bus)', () => {
  let t: TestApp;
  let check: ResponseCheck;
  let receivers: Receiver[] = [];
  let seq = 0;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_webhook_endpoints',
      env: {
        OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
        OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: '0,300,600',
        OUTGOING_WEBHOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
        OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
      },
    });
    check = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
  });
  beforeEach(async () => {
    await t.reset();
    for (const name of ['webhook_endpoints', 'webhook_endpoint_tenants', 'webhook_deliveries', 'idempotency_inbox'])
      await t.db.collection(name).deleteMany({});
  });
  afterEach(async () => {
    await t.app.get(DeliveryWorkflow).settled();
    await Promise.all(receivers.map((r) => r.stop()));
    receivers = [];
  });
  afterAll(async () => t.close());

  const receiver = async () => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  const endpoints = () => t.db.collection('webhook_endpoints');
  const deliveries = () =>
    t.db.collection<{
      _id: string;
      status: string;
      attempts: { at: Date; httpStatus: number | null; error: string | null }[];
      expiresAt: Date | null;
    }>('webhook_deliveries');
  const RETENTION_MS = 30 * 24 * 3600 * 1000;
  /** An ended delivery expires its retention after its last attempt. */
  const expiresAfterLastAttempt = async (id: string) => {
    const row = (await deliveries().findOne({ _id: id }))!;
    return row.expiresAt!.getTime() - row.attempts.at(-1)!.at.getTime();
  };

  function expectDocumented(res: Response, method: string, path: string): void {
    const contentType = String(res.headers['content-type']).split(';')[0];
    expect(check.errors(method, path, res.status, contentType, res.body)).toEqual([]);
  }

  const register = (url: string, tenant: Tenant = 'acme', key = `we-${++seq}`, events: string[] = ['order.completed']) =>
    t.http().post('/v1/webhook-endpoints').set(auth(tenant)).set('Idempotency-Key', key).send({ url, events });

  async function endpointFor(r: Receiver, tenant: Tenant = 'acme', events?: string[]): Promise<{ id: string; secret: string }> {
    const res = await register(r.url, tenant, undefined, events).expect(201);
    return { id: res.body.id as string, secret: res.body.secret as string };
  }

  /** A paid order of `tenant`, its event relayed to the bus; the event. */
  async function orderEvent(tenant: Tenant = 'acme'): Promise<OutboxEvent> {
    const res = await t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', `order-${++seq}`).send(orderBody());
    expect(res.status).toBe(201);
    await t.app.get(OutboxRelay).tick();
    const event = await t.db
      .collection<OutboxEvent>('outbox_events')
      .findOne({ aggregateId: res.body.id as string, type: 'order.completed' });
    expect(event).toMatchObject({ status: 'published' });
    return event!;
  }

  it('a keyed create makes one endpoint; its replay answers the stored bytes; the secret is never stored in clear', async () => {
    const r = await receiver();
    const first = await register(r.url, 'acme', 'create-1').expect(201);
    expectDocumented(first, 'POST', '/v1/webhook-endpoints');
    expect(first.body).toMatchObject({ url: r.url, events: ['order.completed'], status: 'enabled', description: null });
    expect(first.body.id).toMatch(/^we_[0-9a-f]{24}$/);
    expect(first.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(String(first.body.secret).slice(6), 'base64')).toHaveLength(32);
    expect(first.headers.location).toBe(`/v1/webhook-endpoints/${first.body.id}`);

    const replay = await register(r.url, 'acme', 'create-1').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(first.text);
    await register('https://other.example/hook', 'acme', 'create-1').expect(422);
    expect(await endpoints().countDocuments()).toBe(1);

    // Neither the endpoint nor the key's stored answer holds the secret in clear.
    const raw = JSON.stringify([await endpoints().find().toArray(), await t.db.collection('idempotency_records').find().toArray()]);
    expect(raw).not.toContain(String(first.body.secret).slice(6, 30));

    const one = await t.http().get(`/v1/webhook-endpoints/${first.body.id}`).set(auth()).expect(200);
    expectDocumented(one, 'GET', '/v1/webhook-endpoints/{id}');
    expect(one.body.secret).toBeUndefined();
    const list = await t.http().get('/v1/webhook-endpoints').set(auth()).expect(200);
    expectDocumented(list, 'GET', '/v1/webhook-endpoints');
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([first.body.id]);
  });

  it('bad input is a 4xx that stores nothing', async () => {
    const bad = await t
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth())
      .set('Idempotency-Key', 'bad-1')
      .send({ url: 'http://127.0.0.1/x', events: ['Not A Type'] });
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_failed']);
    const raw = await t
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth())
      .set('Idempotency-Key', 'bad-2')
      .set('content-type', 'application/json')
      .send('{"url": "http://x", "events": [');
    expect([raw.status, raw.body.code]).toEqual([400, 'malformed_json']);
    const scheme = await register('ftp://127.0.0.1/hook', 'acme', 'bad-3').expect(422);
    expect(scheme.body).toMatchObject({ code: 'webhook_url_refused' });
    expectDocumented(scheme, 'POST', '/v1/webhook-endpoints');
    const credentials = await register('http://user:pw@127.0.0.1/hook', 'acme', 'bad-4').expect(422);
    expect(credentials.body).toMatchObject({ code: 'webhook_url_refused' });
    await t
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth())
      .send({ url: 'http://127.0.0.1/x', events: ['order.completed'] })
      .expect(400);
    expect(await endpoints().countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
  });

  it("each tenant's endpoint gets its own events exactly once, validly signed, with the CloudEvents body; a redelivered event adds nothing", async () => {
    const [ra, rb] = [await receiver(), await receiver()];
    const a = await endpointFor(ra, 'acme');
    const b = await endpointFor(rb, 'globex');
    const eventA = await orderEvent('acme');
    const eventB = await orderEvent('globex');
    await eventually('both deliveries', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 2);

    for (const [r, endpoint, event] of [
      [ra, a, eventA],
      [rb, b, eventB],
    ] as const) {
      expect(r.received).toHaveLength(1);
      const { headers, body } = r.received[0];
      expect(headers['webhook-id']).toBe(event._id);
      // The receiver's check: throws on a bad signature or a stale timestamp.
      expect(new Webhook(endpoint.secret).verify(body, headers as Record<string, string>)).toMatchObject({ id: event._id });
      // The stream's envelope, byte for byte what the bus carried (plus its sequence where events have one).
      expect(body).toBe(JSON.stringify(toCloudEvent(toPublishedEvent(event))));
      expect(JSON.parse(body)).toMatchObject({
        specversion: '1.0',
        id: event._id,
        source: '/idempotent-orders',
        type: 'order.completed',
        subject: event.aggregateId,
        time: event.createdAt.toISOString(),
        datacontenttype: 'application/json',
        tenant: event.tenant,
        schemaversion: event.schemaVersion,
        data: event.payload,
      });
    }
    expect(await t.db.collection('idempotency_inbox').countDocuments({ _id: inboxId(DISPATCHER_CONSUMER, eventA._id) as never })).toBe(1);

    // The transport delivers A's event again (at least once): the inbox drops it, no second record, nothing sent.
    await (t.app.get(EventPublisher) as LogEventPublisher).publish(toPublishedEvent(eventA));
    await t.app.get(DeliveryWorkflow).pass();
    await t.app.get(DeliveryWorkflow).settled();
    expect(await deliveries().countDocuments()).toBe(2);
    expect(ra.received).toHaveLength(1);

    const list = await t.http().get(`/v1/webhook-endpoints/${a.id}/deliveries`).set(auth()).expect(200);
    expectDocumented(list, 'GET', '/v1/webhook-endpoints/{id}/deliveries');
    expect(list.body.data).toEqual([
      expect.objectContaining({ eventId: eventA._id, eventType: 'order.completed', status: 'succeeded', nextAttemptAt: null }),
    ]);
    expect(list.body.data[0].attempts).toEqual([expect.objectContaining({ httpStatus: 200, error: null })]);
  });

  it('a tenant has at most 16 endpoints: the 17th is a 409 that stores nothing, replays still answer, and its key works once one is deleted', async () => {
    const url = 'http://127.0.0.1:9/hook'; // never called: no event is sent in this test
    const ids: string[] = [];
    for (let n = 1; n <= 16; n++) ids.push((await register(url, 'acme', `cap-${n}`).expect(201)).body.id as string);
    await register(url, 'globex', 'cap-other').expect(201); // another tenant's count is its own

    const refused = await register(url, 'acme', 'cap-17').expect(409);
    expect(refused.body).toMatchObject({ code: 'webhook_endpoint_limit', limit: 16 });
    expectDocumented(refused, 'post', '/v1/webhook-endpoints');
    expect(await endpoints().countDocuments({ tenant: 'acme' })).toBe(16);
    expect(await t.db.collection('idempotency_records').countDocuments({ clientKey: 'cap-17' })).toBe(0);

    const replay = await register(url, 'acme', 'cap-3').expect(201); // a create that succeeded replays at the cap
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(ids[2]);
    expect((await t.http().get('/v1/webhook-endpoints').set(auth()).expect(200)).body.data).toHaveLength(16);

    await t.http().delete(`/v1/webhook-endpoints/${ids[0]}`).set(auth()).expect(200);
    await register(url, 'acme', 'cap-17').expect(201);
    expect(await endpoints().countDocuments({ tenant: 'acme' })).toBe(16);
    // Every create wrote the tenant's one document before counting: what makes creates racing at the cap conflict
    // on a replica set (the test below), where each would otherwise count its own snapshot and all would commit.
    expect(await t.db.collection('webhook_endpoint_tenants').find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'acme', lastCreateAt: expect.any(Date) },
      { _id: 'globex', lastCreateAt: expect.any(Date) },
    ]);
  });

  const serialized = 'the emulator runs one transaction at a time, so creates cannot race there; a real replica set runs it';
  if (onEmulator()) process.stdout.write(`SKIPPED on the emulator: "creates sent at once at the cap" - ${serialized}\n`);
  (onEmulator() ? it.skip : it)(
    `creates sent at once at the cap: exactly one more endpoint, the rest 409${onEmulator() ? ` (SKIPPED: ${serialized})` : ''}`,
    async () => {
      const url = 'http://127.0.0.1:9/hook';
      for (let n = 1; n <= 15; n++) await register(url, 'acme', `race-${n}`).expect(201);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => register(url, 'acme', `race-burst-${n}`)));
      expect(answers.map((res) => res.status).sort()).toEqual([201, ...Array<number>(9).fill(409)]);
      expect(await endpoints().countDocuments({ tenant: 'acme' })).toBe(16);
    },
  );

  it("tenant isolation both ways: another tenant's endpoint and its deliveries are 404 to every route", async () => {
    const r = await receiver();
    const a = await endpointFor(r, 'acme');
    const event = await orderEvent('acme');
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);
    const asGlobex = [
      t.http().get(`/v1/webhook-endpoints/${a.id}`),
      t.http().get(`/v1/webhook-endpoints/${a.id}/deliveries`),
      t.http().patch(`/v1/webhook-endpoints/${a.id}`).send({ enabled: false }),
      t.http().delete(`/v1/webhook-endpoints/${a.id}`),
      t.http().post(`/v1/webhook-endpoints/${a.id}/rotate-secret`).set('Idempotency-Key', 'x-rot'),
      t.http().post(`/v1/webhook-endpoints/${a.id}/deliveries/${event._id}/retry`).set('Idempotency-Key', 'x-retry'),
    ];
    for (const req of asGlobex) {
      const res = await req.set(auth('globex'));
      expect([res.status, res.body.code]).toEqual([404, 'webhook_endpoint_not_found']);
    }
    expect((await t.http().get('/v1/webhook-endpoints').set(auth('globex')).expect(200)).body.data).toEqual([]);
    expect(await endpoints().findOne({ _id: a.id as never })).toMatchObject({ status: 'enabled' });
    // Nor does globex's event reach acme's endpoint (acme's is the only endpoint).
    await orderEvent('globex');
    await t.app.get(DeliveryWorkflow).settled();
    expect(r.received).toHaveLength(1);
    expect(await deliveries().countDocuments()).toBe(1);
  });

  it('the deliveries list pages newest first with a cursor; a cursor it did not give, or another endpoint gave, is a 400', async () => {
    const r = await receiver();
    const a = await endpointFor(r);
    const b = await endpointFor(await receiver());
    const events = [await orderEvent(), await orderEvent(), await orderEvent()];
    await eventually('the deliveries', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 6);
    const list = (query: string) => t.http().get(`/v1/webhook-endpoints/${a.id}/deliveries${query}`).set(auth());
    const first = await list('?limit=2').expect(200);
    expectDocumented(first, 'GET', '/v1/webhook-endpoints/{id}/deliveries');
    expect(first.body.data).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await list(`?limit=2&cursor=${first.body.nextCursor}`).expect(200);
    expect(second.body).toMatchObject({ data: [expect.any(Object)], nextCursor: null });
    const paged = [...first.body.data, ...second.body.data] as { eventId: string; createdAt: string }[];
    expect(new Set(paged.map((d) => d.eventId))).toEqual(new Set(events.map((e) => e._id)));
    const times = paged.map((d) => d.createdAt);
    expect(times).toEqual([...times].sort().reverse());
    // The default page holds them all; nextCursor null.
    expect((await list('').expect(200)).body).toMatchObject({ data: expect.any(Array), nextCursor: null });

    const otherEndpoints = await t.http().get(`/v1/webhook-endpoints/${b.id}/deliveries?limit=1`).set(auth()).expect(200);
    for (const [query, code] of [
      [`?cursor=${otherEndpoints.body.nextCursor}`, 'invalid_cursor'],
      ['?cursor=not-a-cursor', 'invalid_cursor'],
      ['?limit=0', 'validation_failed'],
      ['?limit=101', 'validation_failed'],
    ]) {
      const res = await list(query);
      expect([query, res.status, res.body.code]).toEqual([query, 400, code]);
      expectDocumented(res, 'GET', '/v1/webhook-endpoints/{id}/deliveries');
    }
  });

  it('a 500 then a 200: two attempts with the same webhook-id, and the deliveries API says succeeded', async () => {
    const r = await receiver();
    // Read while the second attempt is in flight: pending, the first attempt recorded, nothing to expire yet.
    let duringRetry: unknown = null;
    r.behaviour = (n, res) => {
      if (n === 1) return answer(500)(n, res);
      void deliveries()
        .findOne({})
        .then((row) => (duringRetry = row))
        .finally(() => answer(200)(n, res));
    };
    const a = await endpointFor(r);
    const event = await orderEvent();
    await eventually('the retry', async () => (await deliveries().findOne({ status: 'succeeded' })) ?? undefined);
    expect(duringRetry).toMatchObject({ status: 'pending', attempts: [{ httpStatus: 500 }], expiresAt: null });
    // Ended: the TTL index removes it 30 days after its last attempt.
    expect(await expiresAfterLastAttempt(`${event._id}:${a.id}`)).toBe(RETENTION_MS);
    const indexes = await deliveries().indexes();
    expect(indexes.find((index) => index.name === 'retention')).toMatchObject({ key: { expiresAt: 1 }, expireAfterSeconds: 0 });
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual([event._id, event._id]);
    // On the scaled schedule: the second attempt waited its 300 ms.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(250);
    const list = await t.http().get(`/v1/webhook-endpoints/${a.id}/deliveries`).set(auth()).expect(200);
    expect(list.body.data[0]).toMatchObject({ eventId: event._id, status: 'succeeded' });
    expect(list.body.data[0].attempts.map((x: { httpStatus: number }) => x.httpStatus)).toEqual([500, 200]);
  });

  it('every attempt failing ends the delivery failed after the schedule; a keyed retry sends it again with the same webhook-id', async () => {
    const r = await receiver();
    // Read while the manual retry's attempt is in flight: pending again, so its expiry is lifted.
    let duringManualRetry: unknown = null;
    r.behaviour = (n, res) => {
      if (n <= 3) return answer(503)(n, res);
      void deliveries()
        .findOne({})
        .then((row) => (duringManualRetry = row))
        .finally(() => answer(204)(n, res));
    };
    const a = await endpointFor(r);
    const event = await orderEvent();
    await eventually('the last attempt', async () => (await deliveries().findOne({ status: 'failed' })) ?? undefined);
    expect((await deliveries().findOne({}))!.attempts.map((x) => x.httpStatus)).toEqual([503, 503, 503]);
    expect(await expiresAfterLastAttempt(`${event._id}:${a.id}`)).toBe(RETENTION_MS);
    expect(await endpoints().findOne({ _id: a.id as never })).toMatchObject({ status: 'enabled', failingSince: expect.any(Date) });

    const retry = await t
      .http()
      .post(`/v1/webhook-endpoints/${a.id}/deliveries/${event._id}/retry`)
      .set(auth())
      .set('Idempotency-Key', 'retry-1')
      .expect(202);
    expect(retry.body).toEqual({ eventId: event._id, status: 'pending' });
    await eventually('the manual retry', async () => (await deliveries().findOne({ status: 'succeeded' })) ?? undefined);
    // Its replay is the stored answer: no third round.
    const replay = await t
      .http()
      .post(`/v1/webhook-endpoints/${a.id}/deliveries/${event._id}/retry`)
      .set(auth())
      .set('Idempotency-Key', 'retry-1')
      .expect(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await t.app.get(DeliveryWorkflow).settled();
    expect(r.received).toHaveLength(4);
    expect(new Set(r.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([event._id]));
    // The retry made it pending (no expiry) and its success ended it again: the retention runs from the fourth attempt.
    expect(duringManualRetry).toMatchObject({ status: 'pending', expiresAt: null });
    expect(await expiresAfterLastAttempt(`${event._id}:${a.id}`)).toBe(RETENTION_MS);
    expect(await endpoints().findOne({ _id: a.id as never })).toMatchObject({ failingSince: null });
    await t
      .http()
      .post(`/v1/webhook-endpoints/${a.id}/deliveries/evt_nope/retry`)
      .set(auth())
      .set('Idempotency-Key', 'retry-2')
      .expect(404);
  });

  it('a keyed retry asked for while an attempt is in flight is kept: the attempt ending it failed no longer swallows the retry', async () => {
    const r = await receiver();
    const a = await endpointFor(r);
    let eventId = '';
    let retried: Promise<unknown> = Promise.resolve();
    r.behaviour = (n, res) => {
      if (n < 3) return answer(503)(n, res);
      if (n > 3) return answer(204)(n, res);
      // The schedule's last attempt: the merchant asks for a retry while it is in flight, then it fails too.
      retried = t
        .http()
        .post(`/v1/webhook-endpoints/${a.id}/deliveries/${eventId}/retry`)
        .set(auth())
        .set('Idempotency-Key', 'retry-in-flight')
        .expect(202)
        .then(() => answer(503)(n, res));
    };
    eventId = (await orderEvent())._id;
    const delivery = await eventually(
      'the retry after the last attempt',
      async () => (await deliveries().findOne({ status: 'succeeded' })) ?? undefined,
    );
    await retried;
    // The third attempt answers once the retry is recorded (202). On a loaded machine that can outlast the attempt's
    // timeout (no status): the retry then lands just before or after the attempt's end, and is kept either way.
    const statuses = delivery.attempts.map((x) => x.httpStatus);
    expect([statuses[0], statuses[1], statuses[3]]).toEqual([503, 503, 204]);
    expect([503, null]).toContain(statuses[2]);
    expect(statuses).toHaveLength(4);
    expect(r.received).toHaveLength(4);
    expect(new Set(r.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([eventId]));
  });

  it("an erasure reaches recorded deliveries: a retry after it sends the pseudonym, validly signed; another tenant's are untouched", async () => {
    const [ra, rb] = [await receiver(), await receiver()];
    const a = await endpointFor(ra, 'acme');
    await endpointFor(rb, 'globex');
    const orderOf = async (tenant: Tenant) => {
      const body = orderBody({ customerId: 'cus_erase_me' });
      await t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', `order-${++seq}`).send(body).expect(201);
    };
    await orderOf('acme');
    await orderOf('globex');
    await t.app.get(OutboxRelay).tick();
    await eventually('both deliveries', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 2);
    const [delivered] = await deliveries()
      .find({ tenant: 'acme' } as never)
      .toArray();
    const eventId = (delivered as unknown as { eventId: string }).eventId;
    // Found by its subject (the customer's keyed digest); a row recorded before that field existed, by its body.
    expect((delivered as unknown as { subject: string }).subject).toMatch(/^.{16,}$/);
    const legacy: Record<string, unknown> = { ...(delivered as unknown as Record<string, unknown>), _id: 'legacy-row', status: 'failed' };
    delete legacy.subject;
    await deliveries().insertOne(legacy as never);

    await t.http().delete('/v1/customers/cus_erase_me/data').set(auth('acme')).expect(200);
    const legacyRow = (await deliveries().findOne({ _id: 'legacy-row' })) as unknown as { payload: string; subject?: string };
    expect(legacyRow.payload).not.toContain('cus_erase_me');
    expect(legacyRow.subject).toBe('');
    await deliveries().deleteOne({ _id: 'legacy-row' });
    expect((await deliveries().findOne({ _id: delivered._id })) as unknown as { subject: string }).toMatchObject({ subject: '' });
    const payloads = async (tenant: Tenant) =>
      (
        await deliveries()
          .find({ tenant } as never)
          .toArray()
      ).map((d) => (d as unknown as { payload: string }).payload);
    expect((await payloads('acme')).join()).not.toContain('cus_erase_me');
    expect(JSON.parse((await payloads('acme'))[0])).toMatchObject({ id: eventId, data: { customerId: expect.stringMatching(/^erased_/) } });
    expect((await payloads('globex'))[0]).toContain('cus_erase_me');

    await t
      .http()
      .post(`/v1/webhook-endpoints/${a.id}/deliveries/${eventId}/retry`)
      .set(auth())
      .set('Idempotency-Key', 'retry-erased')
      .expect(202);
    await eventually('the retry', () => ra.received.length === 2);
    const { headers, body } = ra.received[1];
    expect(body).not.toContain('cus_erase_me');
    // Signed at send time over the bytes sent: the receiver's check passes on the rewritten body.
    expect(new Webhook(a.secret).verify(body, headers as Record<string, string>)).toMatchObject({ id: eventId });
    expect(body).toBe((await payloads('acme'))[0]);
  });

  it('a receiver that hangs is cut at the timeout and retried', async () => {
    const r = await receiver();
    r.behaviour = (n, res) => (n === 1 ? r.hang(n, res) : answer(200)(n, res));
    await endpointFor(r);
    await orderEvent();
    const delivery = await eventually(
      'the retry after the timeout',
      async () => (await deliveries().findOne({ status: 'succeeded' })) ?? undefined,
      30_000,
    );
    expect(delivery.attempts.map((x) => [x.httpStatus, x.error])).toEqual([
      [null, 'timeout'],
      [200, null],
    ]);
    const first = (await deliveries().findOne({}))!.attempts[0] as unknown as { durationMs: number };
    expect(first.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(first.durationMs).toBeLessThan(TIMEOUT_MS + 5000);
  });

  it('a receiver sending without end is cut at 64 kB (its 200 counts); a redirect is not followed', async () => {
    const flood = await receiver();
    flood.behaviour = flood.flood;
    await endpointFor(flood);
    await orderEvent();
    await eventually('the flooded delivery', async () => (await deliveries().findOne({ status: 'succeeded' })) ?? undefined);
    // What the receiver managed to write before we closed: socket buffers on both sides, never the gigabyte.
    expect(flood.streamedBytes).toBeLessThan(16 * 1024 * 1024);
    await t.db.collection('webhook_endpoints').deleteMany({});
    await t.db.collection('webhook_deliveries').deleteMany({});

    const target = await receiver();
    const redirecting = await receiver();
    redirecting.behaviour = answer(307, { location: target.url });
    await endpointFor(redirecting);
    await orderEvent();
    const delivery = await eventually('the failed delivery', async () => (await deliveries().findOne({ status: 'failed' })) ?? undefined);
    expect(delivery.attempts.map((x) => x.httpStatus)).toEqual([307, 307, 307]);
    expect(target.received).toHaveLength(0);
  });

  it('rotate-secret: for the overlap both secrets sign every delivery; PATCH and DELETE act on the endpoint', async () => {
    const r = await receiver();
    const a = await endpointFor(r);
    const rotated = await t
      .http()
      .post(`/v1/webhook-endpoints/${a.id}/rotate-secret`)
      .set(auth())
      .set('Idempotency-Key', 'rot-1')
      .expect(200);
    expectDocumented(rotated, 'POST', '/v1/webhook-endpoints/{id}/rotate-secret');
    expect(rotated.body.secret).not.toBe(a.secret);
    const overlap = Date.parse(rotated.body.previousSecretExpiresAt as string) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3600_000);
    const event = await orderEvent();
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);
    const { headers, body } = r.received[0];
    expect(String(headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [a.secret, rotated.body.secret as string]) {
      expect(new Webhook(secret).verify(body, headers as Record<string, string>)).toMatchObject({ id: event._id });
    }

    const patched = await t
      .http()
      .patch(`/v1/webhook-endpoints/${a.id}`)
      .set(auth())
      .send({ enabled: false, events: ['*'] })
      .expect(200);
    expectDocumented(patched, 'PATCH', '/v1/webhook-endpoints/{id}');
    expect(patched.body).toMatchObject({ status: 'disabled', disabledReason: 'manual', events: ['*'] });
    await orderEvent();
    await t.app.get(DeliveryWorkflow).settled();
    expect(await deliveries().countDocuments()).toBe(1);
    await t.http().patch(`/v1/webhook-endpoints/${a.id}`).set(auth()).send({ enabled: 'yes' }).expect(400);
    await t.http().delete(`/v1/webhook-endpoints/${a.id}`).set(auth()).expect(200);
    await t.http().get(`/v1/webhook-endpoints/${a.id}`).set(auth()).expect(404);
    expect(await endpoints().countDocuments()).toBe(0);
  });
  it('shutting down: once the dispatcher has stopped, the relay leaves events in the outbox for the next start, never marked published undelivered', async () => {
    // Nest stops the webhooks module before the outbox's relay; the bus counted a publish without subscribers as
    // done, so every event relayed in that gap was marked published and its webhook lost on each deploy.
    const r = await receiver();
    await endpointFor(r);
    const dispatcher = t.app.get(WebhookDispatcher);
    await dispatcher.onApplicationShutdown();
    const outbox = t.db.collection<OutboxEvent>('outbox_events');
    try {
      expect((await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `order-${++seq}`).send(orderBody())).status).toBe(201);
      expect(await t.app.get(OutboxRelay).tick()).toBe(0);
      expect(await outbox.countDocuments({ status: 'pending' })).toBe(1);
      expect(await deliveries().countDocuments()).toBe(0);
    } finally {
      dispatcher.onApplicationBootstrap(); // the next start subscribes again
    }
    await outbox.updateMany({ status: 'pending' }, { $set: { availableAt: new Date(0) } }); // skip the backoff
    expect(await t.app.get(OutboxRelay).tick()).toBe(1);
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);
    expect(r.received).toHaveLength(1);
  });
  it("an event the stream still holds from before its customer's erasure goes out with a pseudonym; orders after it name the customer", async () => {
    // The erasure rewrites the deliveries it finds; a lagging dispatcher reads the event as published, real id
    // included, after the erasure committed (the stream is never rewritten).
    const r = await receiver();
    await endpointFor(r);
    const body = orderBody({ customerId: 'cus_lagging' });
    await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `order-${++seq}`).send(body).expect(201);
    const outbox = t.db.collection<OutboxEvent>('outbox_events');
    const before = (await outbox.findOne({ type: 'order.completed' }))!;
    const onTheStream = toCloudEvent(toPublishedEvent(before)); // as published, before the erasure
    expect(JSON.stringify(onTheStream)).toContain('cus_lagging');

    await t.http().delete('/v1/customers/cus_lagging/data').set(auth()).expect(200);
    await t.app.get(WebhookDispatcher).record([{ event: onTheStream, redeliveries: 0 }]);
    await eventually('the delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 1);
    expect(r.received[0].body).not.toContain('cus_lagging');
    expect(JSON.parse(r.received[0].body)).toMatchObject({
      id: before._id,
      data: { customerId: expect.stringMatching(/^erased_[0-9a-f]{24}$/) },
    });
    expect(await deliveries().findOne({ eventId: before._id } as never)).toMatchObject({ subject: '' });

    // The customer comes back after the erasure: its new order's event names it, as any new request may.
    const again = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `order-${++seq}`).send(body).expect(201);
    await t.app.get(OutboxRelay).tick();
    await eventually('the new delivery', async () => (await deliveries().countDocuments({ status: 'succeeded' })) === 2);
    const fresh = r.received.find((received) => received.body.includes(again.body.id as string))!;
    expect(JSON.parse(fresh.body)).toMatchObject({ data: { customerId: 'cus_lagging' } });
    expect(r.received).toHaveLength(2); // the erased event, relayed again, was a duplicate for the inbox
  });

  it('an event older than the retention horizon is not delivered: a replayed stream sends no month-old event twice', async () => {
    const r = await receiver();
    await endpointFor(r);
    await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `order-${++seq}`).send(orderBody()).expect(201);
    const event = (await t.db.collection<OutboxEvent>('outbox_events').findOne({ type: 'order.completed' }))!;
    const old = { ...toCloudEvent(toPublishedEvent(event)), time: new Date(Date.now() - 31 * 24 * 3600 * 1000).toISOString() };
    const skipped = async () =>
      Number(
        /^outgoing_webhook_consumer_redeliveries_total\{kind="past_retention"\} (\d+)/m.exec((await t.http().get('/metrics')).text)?.[1] ??
          0,
      );
    const countedBefore = await skipped();
    await t.app.get(WebhookDispatcher).record([{ event: old, redeliveries: 1 }]);
    expect(await deliveries().countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_inbox').countDocuments({ _id: inboxId(DISPATCHER_CONSUMER, event._id) as never })).toBe(1);
    expect((await skipped()) - countedBefore).toBe(1);
  });
  it("one endpoint's backlog never holds up another's: behind a hanging merchant with 200 due, another tenant's delivery goes out at once", async () => {
    const [ra, rb] = [await receiver(), await receiver()];
    ra.behaviour = ra.hang;
    const a = await endpointFor(ra, 'acme');
    await endpointFor(rb, 'globex');
    const now = Date.now();
    // All due before the other tenant's.
    const backlog = Array.from({ length: 200 }, (_, i) => dueDelivery(a.id as string, `evt_backlog_${i}`, new Date(now - 60_000 + i)));
    await deliveries().insertMany(backlog as never[]);
    try {
      await orderEvent('globex');
      await eventually("the other tenant's delivery", () => rb.received.length === 1, 5_000);
      expect(ra.received.length).toBeLessThanOrEqual(2); // the hanging endpoint gets its share, no more
    } finally {
      await deliveries().deleteMany({ endpointId: a.id } as never);
    }
  });
});

/** A pending delivery of acme's to `endpointId`, due at `nextAttemptAt`, written straight to the store (a backlog). */
function dueDelivery(endpointId: string, eventId: string, nextAttemptAt: Date) {
  return {
    _id: `${eventId}:${endpointId}`,
    tenant: 'acme',
    endpointId,
    eventId,
    eventType: 'order.completed',
    payload: '{}',
    subject: '',
    status: 'pending',
    attempts: [],
    scheduleIndex: 0,
    nextAttemptAt,
    lease: null,
    expiresAt: null,
    createdAt: nextAttemptAt,
    updatedAt: nextAttemptAt,
  };
}

describe('outgoing webhooks with every worker busy', () => {
  let t: TestApp;
  let r: Receiver;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_webhook_saturated',
      env: {
        OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
        OUTGOING_WEBHOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
        OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
        OUTGOING_WEBHOOKS_MAX_CONCURRENCY: '1',
      },
    });
    r = await new Receiver().start();
    r.behaviour = r.hang;
  });
  afterAll(async () => {
    await t.db.collection('webhook_deliveries').deleteMany({});
    await r.stop();
    await t.app.get(DeliveryWorkflow).settled();
    await t.close();
  });

  it('the oldest-due gauge shows the backlog while the workers are saturated (it read 0 then, and the lag alert never fired)', async () => {
    const created = await t
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth())
      .set('Idempotency-Key', 'saturated-1')
      .send({ url: r.url, events: ['order.completed'] })
      .expect(201);
    const endpointId = created.body.id as string;
    const dueSince = new Date(Date.now() - 60_000);
    await t.db
      .collection('webhook_deliveries')
      .insertMany(Array.from({ length: 3 }, (_, i) => dueDelivery(endpointId, `evt_saturated_${i}`, dueSince)) as never[]);
    await eventually('the one worker busy', () => r.received.length === 1);
    await t.app.get(DeliveryWorkflow).pass(); // no worker free: nothing starts, the gauge is still read
    const gauge = Number(/^outgoing_webhook_oldest_due_age_seconds ([\d.e+-]+)/m.exec((await t.http().get('/metrics')).text)?.[1]);
    expect(gauge).toBeGreaterThanOrEqual(59);
  });
});

describe('outgoing webhooks across a rotation of the encryption key', () => {
  const keyA = randomBytes(32).toString('base64');
  const keyB = randomBytes(32).toString('base64');
  const env = {
    OUTGOING_WEBHOOKS_ALLOW_PRIVATE: 'true',
    OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: '100',
    OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: '0,60000',
  };
  const dbName = 'test_webhook_key_rotation';
  let r: Receiver;

  beforeAll(async () => {
    r = await new Receiver().start();
  });
  afterAll(async () => r.stop());

  it('each boot seals endpoint secrets under the current key, so the retired key can go; a secret no key opens is a recorded failure, never an unsigned send', async () => {
    const before = await startApp({ dbName, env: { ...env, IDEMPOTENCY_ENCRYPTION_KEY: `ka:${keyA}` } });
    const created = await before
      .http()
      .post('/v1/webhook-endpoints')
      .set(auth())
      .set('Idempotency-Key', 'rot-1')
      .send({ url: r.url, events: ['order.completed'] });
    expect(created.status).toBe(201);
    const { id, secret } = created.body as { id: string; secret: string };
    await before.close();

    // The new key current, the old one still listed: this boot seals the secret again under kb.
    const rotated = await startApp({
      dbName,
      keepData: true,
      env: { ...env, IDEMPOTENCY_ENCRYPTION_KEY: `kb:${keyB}`, IDEMPOTENCY_DECRYPTION_KEYS: `ka:${keyA}` },
    });
    const sealedUnder = async (t: TestApp) =>
      (
        (await t.db.collection('webhook_endpoints').findOne({ _id: id as never })) as unknown as {
          secrets: { sealed: { keyId: string } }[];
        }
      ).secrets.map((s) => s.sealed.keyId);
    await eventually('the secret sealed under kb', async () => (await sealedUnder(rotated)).join() === 'kb');
    await rotated.close();

    // The old key dropped: deliveries still sign with the same secret.
    const after = await startApp({ dbName, keepData: true, env: { ...env, IDEMPOTENCY_ENCRYPTION_KEY: `kb:${keyB}` } });
    try {
      const deliveries = after.db.collection<{ status: string; attempts: { error: string | null }[] }>('webhook_deliveries');
      await after.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'rot-order-1').send(orderBody()).expect(201);
      await after.app.get(OutboxRelay).tick();
      await eventually('the signed delivery', () => r.received.length === 1);
      expect(new Webhook(secret).verify(r.received[0].body, r.received[0].headers as Record<string, string>)).toBeTruthy();

      // A secret sealed under a key no longer configured (dropped before a boot sealed it again): recorded, retried.
      const endpoints = after.db.collection<{ _id: string; secrets: { sealed: { keyId: string } }[] }>('webhook_endpoints');
      const stored = (await endpoints.findOne({ _id: id }))!;
      const secrets = stored.secrets.map((s) => ({ ...s, sealed: { ...s.sealed, keyId: 'ka' } }));
      await endpoints.updateOne({ _id: id }, { $set: { secrets } });
      await after.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'rot-order-2').send(orderBody()).expect(201);
      await after.app.get(OutboxRelay).tick();
      await eventually(
        'the failed attempt recorded',
        async () => (await deliveries.countDocuments({ 'attempts.error': 'secret_unavailable' })) === 1,
      );
      expect(await deliveries.findOne({ 'attempts.error': 'secret_unavailable' })).toMatchObject({ status: 'pending' });
      expect(r.received).toHaveLength(1); // nothing was sent unsigned
      await after.app.get(DeliveryWorkflow).settled();
    } finally {
      await after.close();
    }
  });
});
