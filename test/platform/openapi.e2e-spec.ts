import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { compileErrors, validate } from '@readme/openapi-parser';
import type { OpenAPIV3 } from 'openapi-types';
import type { Response } from 'supertest';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { DEV_WEBHOOK_SECRET } from '../../src/config/configuration.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { APP_PROBLEMS } from '../../src/common/error-status.js';
import { ALL_SCOPES, API_KEYS, auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** A key with the `orders` scope only: its admin calls are answered 403. */
const LIMITED = { tenant: 'limited', secret: 'limited-secret-0123456789' };
import { deliver, eventFor, newWebhookSecret } from '../support/webhooks.js';
import { eventually } from '../webhook-endpoints/receiver.js';

/**
 * The document at /docs/json is (a) valid OpenAPI by a standard validator and
 * (b) true: real answers of the running service, validated against the
 * schemas it documents with undocumented members refused, so a field the
 * code returns but the document omits, or a wrong type, fails here.
 */
describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: OpenAPIV3.Document;
  let check: ResponseCheck;

  beforeAll(async () => {
    const keys = Object.entries(API_KEYS).map(([tenant, secret]) => `${tenant}:${secret}:${ALL_SCOPES}`);
    t = await startApp({ dbName: 'test_openapi', env: { API_KEYS: [...keys, `${LIMITED.tenant}:${LIMITED.secret}:orders`].join(',') } });
    doc = (await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document;
    check = await responseCheck(doc);
  });
  afterAll(async () => t.close());

  /** Fails unless `res` is documented for `method path` (a path template) and its body matches that schema. */
  function expectDocumented(res: Response, method: string, path: string): void {
    const contentType = String(res.headers['content-type']).split(';')[0];
    expect(check.errors(method, path, res.status, contentType, res.body)).toEqual([]);
  }

  const create = (key: string, body: object = orderBody()) =>
    t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);

  it('is valid OpenAPI 3.0 by @readme/openapi-parser', async () => {
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
    const result = await validate(structuredClone(doc));
    expect(result.valid ? '' : compileErrors(result)).toBe('');
  });

  it('the validator does refuse a broken document', async () => {
    const broken = structuredClone(doc);
    (broken.components!.schemas!.OrderResponse as OpenAPIV3.SchemaObject).properties!.amountMinor = { type: 'int64' } as never;
    const result = await validate(broken);
    expect(result.valid ? '' : compileErrors(result)).toContain('"type": "int64"');
  });

  it('gives every operation a JSON schema for success and problem+json for every error', () => {
    const gaps: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations as Record<string, OpenAPIV3.OperationObject>)) {
        for (const [status, response] of Object.entries(operation.responses) as [string, OpenAPIV3.ResponseObject][]) {
          const expected = status.startsWith('2') ? 'application/json' : 'application/problem+json';
          if (!response.content?.[expected]?.schema) gaps.push(`${method.toUpperCase()} ${path} ${status}: no ${expected} schema`);
        }
        if (!Object.keys(operation.responses).some((status) => status.startsWith('2')))
          gaps.push(`${method.toUpperCase()} ${path}: no success`);
        if (path.startsWith('/v1/')) {
          // The provider's webhook door has no tenant, so no tenant rate limit: its 401 is the signature's.
          const statuses = path.startsWith('/v1/webhooks/') ? ['401', '503'] : ['401', '429', '503'];
          for (const status of statuses) if (!operation.responses[status]) gaps.push(`${method.toUpperCase()} ${path}: no ${status}`);
        }
      }
    }
    expect(gaps).toEqual([]);
  });

  it('the response check refuses an undocumented field, a wrong type, a missing field and an undocumented status', async () => {
    const order = (await create('k-check').expect(201)).body as Record<string, unknown>;
    const errors = (body: unknown, status = 200) => check.errors('GET', '/v1/orders/{id}', status, 'application/json', body);
    expect(errors(order)).toEqual([]);
    expect(errors({ ...order, internalNote: 'x' })).toEqual([expect.stringContaining('must NOT have additional properties')]);
    expect(errors({ ...order, amountMinor: '2500' })).toEqual([expect.stringContaining('/amountMinor must be integer')]);
    expect(errors({ ...order, items: [{ sku: 'sku_1', quantity: 2 }] })).toEqual([
      expect.stringContaining("must have required property 'unitPriceMinor'"),
    ]);
    expect(errors({ ...order, failureReason: 'lost' })).toEqual([
      expect.stringContaining('/failureReason must be equal to one of the allowed values'),
    ]);
    expect(errors(order, 418)).toEqual(['GET /v1/orders/{id} does not document status 418']);
  });

  it('a created order, its replay, the order and the list match their schemas', async () => {
    const created = await create('k-order').expect(201);
    expectDocumented(created, 'POST', '/v1/orders');
    const replay = await create('k-order').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expectDocumented(replay, 'POST', '/v1/orders');

    // A declined order: failed, with failureReason set and no payment - the nullable fields' other side.
    const declined = await create('k-declined', orderBody({ paymentMethod: { token: 'tok_decline' } })).expect(402);
    expectDocumented(declined, 'POST', '/v1/orders');
    const failed = await t.http().get(`/v1/orders/${declined.body.orderId}`).set(auth()).expect(200);
    expect(failed.body).toMatchObject({ state: 'failed', failureReason: 'card_declined', paymentId: null });
    expectDocumented(failed, 'GET', '/v1/orders/{id}');
    expectDocumented(await t.http().get(`/v1/orders/${created.body.id}`).set(auth()).expect(200), 'GET', '/v1/orders/{id}');

    const first = await t.http().get('/v1/orders?limit=1').set(auth()).expect(200);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expectDocumented(first, 'GET', '/v1/orders');
    const all = await t.http().get('/v1/orders?limit=100').set(auth()).expect(200);
    expect(all.body.nextCursor).toBeNull();
    expectDocumented(all, 'GET', '/v1/orders');
  });

  it('the ledger of a saved and of a failed order match their schema', async () => {
    const saved = (await create('k-ledger').expect(201)).body;
    const ledger = await t.http().get(`/v1/orders/${saved.id}/ledger`).set(auth()).expect(200);
    expect(ledger.body.entries).toHaveLength(4);
    expectDocumented(ledger, 'GET', '/v1/orders/{id}/ledger');
    const declined = (await create('k-ledger-declined', orderBody({ paymentMethod: { token: 'tok_decline' } })).expect(402)).body;
    const none = await t.http().get(`/v1/orders/${declined.orderId}/ledger`).set(auth()).expect(200);
    expect(none.body.entries).toEqual([]);
    expectDocumented(none, 'GET', '/v1/orders/{id}/ledger');
  });

  it('key records (final and pending) and a release match their schemas', async () => {
    await create('k-admin').expect(201);
    const final = await t.http().get('/v1/idempotency-keys/k-admin').set(auth()).expect(200);
    expect(final.body.records[0]).toMatchObject({ status: 'complete', lease: null, responseStatus: 201 });
    expectDocumented(final, 'GET', '/v1/idempotency-keys/{key}');

    const outage = await create('k-outage', orderBody({ paymentMethod: { token: 'tok_provider_down' } })).expect(503);
    expectDocumented(outage, 'POST', '/v1/orders');
    const pending = await t.http().get('/v1/idempotency-keys/k-outage').set(auth()).expect(200);
    expect(pending.body.records[0]).toMatchObject({ status: 'pending', lease: expect.any(Object), responseStatus: null });
    expectDocumented(pending, 'GET', '/v1/idempotency-keys/{key}');

    // Whatever the outage left behind, make it a dead worker's lease: release hands only those to the reaper.
    await t.db.collection('idempotency_records').updateOne({ clientKey: 'k-outage' }, { $set: { 'lease.expiresAt': new Date(0) } });
    const released = await t.http().post('/v1/idempotency-keys/k-outage/release').set(auth()).expect(200);
    expectDocumented(released, 'POST', '/v1/idempotency-keys/{key}/release');
    expectDocumented(
      await t.http().post('/v1/idempotency-keys/k-outage/release').set(auth()).expect(404),
      'POST',
      '/v1/idempotency-keys/{key}/release',
    );
  });

  it('a cancel by key, the canceled key view and the 409 under a canceled key match their schemas', async () => {
    const never = await t.http().post('/v1/idempotency-keys/k-cancel-never/cancel').set(auth()).expect(200);
    expectDocumented(never, 'POST', '/v1/idempotency-keys/{key}/cancel');
    await create('k-cancel-declined', orderBody({ paymentMethod: { token: 'tok_decline' } })).expect(402);
    const declined = await t.http().post('/v1/idempotency-keys/k-cancel-declined/cancel').set(auth()).expect(200);
    expect(declined.body).toMatchObject({ outcome: 'nothing_to_undo', orderId: expect.any(String) });
    expectDocumented(declined, 'POST', '/v1/idempotency-keys/{key}/cancel');
    const view = await t.http().get('/v1/idempotency-keys/k-cancel-declined').set(auth()).expect(200);
    expect(view.body.records[0]).toMatchObject({ status: 'canceled', cancellation: { outcome: 'nothing_to_undo' } });
    expectDocumented(view, 'GET', '/v1/idempotency-keys/{key}');
    expectDocumented(await create('k-cancel-declined').expect(409), 'POST', '/v1/orders');
  });

  it('an erasure, and the replay it turns into 410, match their schemas', async () => {
    await create('k-erase', orderBody({ customerId: 'cus_erase' })).expect(201);
    const erased = await t.http().delete('/v1/customers/cus_erase/data').set(auth()).expect(200);
    expect(erased.body.counts).toMatchObject({ orders: 1, idempotencyRecords: 1 });
    expectDocumented(erased, 'DELETE', '/v1/customers/{customerId}/data');
    expectDocumented(await create('k-erase', orderBody({ customerId: 'cus_erase' })).expect(410), 'POST', '/v1/orders');
    expectDocumented(
      await t.http().delete('/v1/customers/not%20valid/data').set(auth()).expect(400),
      'DELETE',
      '/v1/customers/{customerId}/data',
    );
  });

  it('health answers and common errors match their schemas', async () => {
    expectDocumented(await t.http().get('/health/live').expect(200), 'GET', '/health/live');
    expectDocumented(await t.http().get('/health/ready').expect(200), 'GET', '/health/ready');
    expectDocumented(await t.http().get('/v1/orders').expect(401), 'GET', '/v1/orders');
    expectDocumented(await t.http().get('/v1/orders?cursor=nonsense').set(auth()).expect(400), 'GET', '/v1/orders');
    expectDocumented(await t.http().get('/v1/orders/ord_000000000000000000000000').set(auth()).expect(404), 'GET', '/v1/orders/{id}');
    // Its own key: it used to lean on the order another test created under k-order.
    await create('k-reused').expect(201);
    expectDocumented(await create('k-reused', orderBody({ currency: 'EUR' })).expect(422), 'POST', '/v1/orders');
    const raw = (contentType: string, body: string) =>
      t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-raw').set('Content-Type', contentType).send(body);
    expectDocumented(await raw('application/json', '{"customerId": ').expect(400), 'POST', '/v1/orders');
    expectDocumented(await raw('text/plain', 'hello').expect(415), 'POST', '/v1/orders');
  });

  it('an asynchronous order (202, its replay, processing) and a webhook delivery (200, 401, 400) match their schemas', async () => {
    const accepted = await create('k-async', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202);
    expectDocumented(accepted, 'POST', '/v1/orders');
    expectDocumented(await create('k-async', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202), 'POST', '/v1/orders');
    const processing = await t.http().get(`/v1/orders/${accepted.body.id}`).set(auth()).expect(200);
    expect(processing.body.state).toBe('processing');
    expectDocumented(processing, 'GET', '/v1/orders/{id}');
    const event = await eventFor(t.simulatorDb, chargeKeyFor(accepted.body.id), 'charge.succeeded');
    const delivered = await deliver(t, DEV_WEBHOOK_SECRET, event).expect(200);
    expectDocumented(delivered, 'POST', '/v1/webhooks/payments');
    expectDocumented(await deliver(t, DEV_WEBHOOK_SECRET, event).expect(200), 'POST', '/v1/webhooks/payments');
    expectDocumented(await deliver(t, newWebhookSecret(), event).expect(401), 'POST', '/v1/webhooks/payments');
    expectDocumented(await deliver(t, DEV_WEBHOOK_SECRET, event, { body: '[]' }).expect(400), 'POST', '/v1/webhooks/payments');
  });

  it('refunds: the 201, its replay, the list, one refund, and the refusals match the document', async () => {
    const order = (await create('k-refunded').expect(201)).body as { id: string };
    const refund = (key: string, amountMinor: number) =>
      t.http().post(`/v1/orders/${order.id}/refunds`).set(auth()).set('Idempotency-Key', key).send({ amountMinor, reason: 'duplicate' });
    const created = await refund('k-refund', 1000).expect(201);
    expectDocumented(created, 'POST', '/v1/orders/{id}/refunds');
    expectDocumented(await refund('k-refund', 1000).expect(201), 'POST', '/v1/orders/{id}/refunds');
    expectDocumented(await refund('k-refund-more', 5000).expect(422), 'POST', '/v1/orders/{id}/refunds');
    expectDocumented(await t.http().get(`/v1/orders/${order.id}/refunds`).set(auth()).expect(200), 'GET', '/v1/orders/{id}/refunds');
    expectDocumented(await t.http().get(created.headers.location).set(auth()).expect(200), 'GET', '/v1/orders/{id}/refunds/{refundId}');
    const missing = await t.http().get('/v1/orders/ord_000000000000000000000000/refunds').set(auth()).expect(404);
    expectDocumented(missing, 'GET', '/v1/orders/{id}/refunds');
  });

  it('a manual-capture order, its capture, its void and their refusals match their schemas', async () => {
    const manual = async (key: string) => {
      const created = await create(key, orderBody({ capture: 'manual' })).expect(201);
      expectDocumented(created, 'POST', '/v1/orders');
      return created.body.id as string;
    };
    const action = (id: string, what: 'capture' | 'void', key: string, body: object = {}) =>
      t.http().post(`/v1/orders/${id}/${what}`).set(auth()).set('Idempotency-Key', key).send(body);
    const captured = await manual('k-manual-capture');
    const capturePath = '/v1/orders/{id}/capture';
    expectDocumented(await action(captured, 'capture', 'k-capture', { amountMinor: 999999 }).expect(422), 'POST', capturePath);
    expectDocumented(await action(captured, 'capture', 'k-capture').expect(200), 'POST', capturePath);
    expectDocumented(await action(captured, 'capture', 'k-capture-again').expect(409), 'POST', capturePath);
    const voided = await manual('k-manual-void');
    expectDocumented(await action(voided, 'void', 'k-void').expect(200), 'POST', '/v1/orders/{id}/void');
    expectDocumented(await action(voided, 'void', 'k-void-again').expect(409), 'POST', '/v1/orders/{id}/void');
  });

  // Runs last (Jest keeps declaration order): a documented success that no test above exercised is unchecked.
  it('outgoing webhooks: an endpoint, its replay, the list, a change, a rotation, its deliveries, a retry and a delete match the document', async () => {
    // Port 9 on loopback: nothing answers (NODE_ENV=test allows loopback); the delivery exists, which is what the retry needs.
    const register = () =>
      t
        .http()
        .post('/v1/webhook-endpoints')
        .set(auth())
        .set('Idempotency-Key', 'k-endpoint')
        .send({ url: 'http://127.0.0.1:9/hook', events: ['*'] });
    const created = await register().expect(201);
    const path = `/v1/webhook-endpoints/${created.body.id as string}`;
    expectDocumented(created, 'POST', '/v1/webhook-endpoints');
    expectDocumented(await register().expect(201), 'POST', '/v1/webhook-endpoints');
    expectDocumented(await t.http().get('/v1/webhook-endpoints').set(auth()).expect(200), 'GET', '/v1/webhook-endpoints');
    expectDocumented(await t.http().get(path).set(auth()).expect(200), 'GET', '/v1/webhook-endpoints/{id}');
    const rotated = await t.http().post(`${path}/rotate-secret`).set(auth()).set('Idempotency-Key', 'k-rotate').expect(200);
    expectDocumented(rotated, 'POST', '/v1/webhook-endpoints/{id}/rotate-secret');
    const order = (await create('k-webhook-order').expect(201)).body as { id: string };
    await publishedByTheRelay(`evt_${order.id}_completed`);
    const deliveries = await t.http().get(`${path}/deliveries`).set(auth()).expect(200);
    expectDocumented(deliveries, 'GET', '/v1/webhook-endpoints/{id}/deliveries');
    const retried = await t
      .http()
      .post(`${path}/deliveries/evt_${order.id}_completed/retry`)
      .set(auth())
      .set('Idempotency-Key', 'k-retry')
      .expect(202);
    expectDocumented(retried, 'POST', '/v1/webhook-endpoints/{id}/deliveries/{eventId}/retry');
    expectDocumented(await t.http().patch(path).set(auth()).send({ enabled: false }).expect(200), 'PATCH', '/v1/webhook-endpoints/{id}');
    expectDocumented(await t.http().delete(path).set(auth()).expect(200), 'DELETE', '/v1/webhook-endpoints/{id}');
    expectDocumented(await t.http().get(path).set(auth()).expect(404), 'GET', '/v1/webhook-endpoints/{id}');
  });

  /**
   * Relay passes until the event is published, as the service's timer would run them: a publish that failed once
   * is retried after its backoff, ~1 s (one CI run found no delivery after a single pass and printed no cause).
   * Gives up with the event's state after 30 s.
   */
  const publishedByTheRelay = async (eventId: string) => {
    const stored = () => t.db.collection<{ _id: string; status?: string }>('outbox_events').findOne({ _id: eventId });
    const published = async () => {
      await t.app.get(OutboxRelay).tick();
      return (await stored())?.status === 'published';
    };
    await eventually(`event ${eventId} published by the relay`, published, 30_000).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await stored())}`);
    });
  };

  it('every documented success answer was checked against a real response above', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations as Record<string, OpenAPIV3.OperationObject>).flatMap(([method, operation]) =>
        Object.keys(operation.responses)
          .filter((status) => status.startsWith('2'))
          .map((status) => `${method.toUpperCase()} ${path} ${status}`),
      ),
    );
    // Stripe's door answers only with PAYMENT_PROVIDER=stripe: test/stripe-provider.e2e-spec.ts checks its answers against this document.
    const elsewhere = new Set(['POST /v1/webhooks/stripe 200']);
    expect(documented.filter((answer) => !check.checked.has(answer) && !elsewhere.has(answer))).toEqual([]);
  });

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, OpenAPIV3.OperationObject>).map(([method, operation]) => ({ path, method, operation })),
    );

  it('gives every problem answer an example per code it names, with that code, the status it is documented at, and the status the code is really sent with (every example was the same body, status 0)', () => {
    const wrong: string[] = [];
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses) as [string, OpenAPIV3.ResponseObject][]) {
        const content = response.content?.['application/problem+json'];
        if (!content) continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const examples = Object.values(content.examples ?? {}) as OpenAPIV3.ExampleObject[];
        if (examples.length === 0) wrong.push(`${where}: no example`);
        for (const { value } of examples) {
          const { code, status: sent, type, retryable } = value as { code: string; status: number; type: string; retryable: unknown };
          if (sent !== Number(status)) wrong.push(`${where}: example ${code} says status ${sent}`);
          if (APP_PROBLEMS[code] && APP_PROBLEMS[code].status !== Number(status))
            wrong.push(`${where}: ${code} is sent with ${APP_PROBLEMS[code].status}`);
          if (!type.endsWith(code.replace(/_/g, '-')) || typeof retryable !== 'boolean')
            wrong.push(`${where}: ${code} is not a whole problem`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('documents 403 insufficient_scope on every operation behind an API key, naming its scope, and describes the key as an API key, not a JWT', async () => {
    const secured = operations().filter(({ operation }) => operation.security?.length);
    expect(secured.length).toBeGreaterThan(10);
    const scopeOf = ({ operation }: (typeof secured)[number]) =>
      /the API key lacks the `(\w+)` scope/.exec(
        (operation.responses['403'] as OpenAPIV3.ResponseObject | undefined)?.description ?? '',
      )?.[1];
    expect(secured.filter((op) => !scopeOf(op)).map(({ method, path }) => `${method} ${path}`)).toEqual([]);
    expect(scopeOf(secured.find(({ method, path }) => method === 'post' && path === '/v1/orders')!)).toBe('orders');
    expect(scopeOf(secured.find(({ path }) => path.startsWith('/v1/idempotency-keys/') && !path.endsWith('/cancel'))!)).toBe('admin');
    const scheme = doc.components!.securitySchemes!.bearer as OpenAPIV3.HttpSecurityScheme;
    expect(scheme.bearerFormat).toBe('API key');

    // The real answer of a key without the scope matches what is documented.
    const refused = await t
      .http()
      .get('/v1/idempotency-keys/some-key')
      .set({ Authorization: `Bearer ${LIMITED.secret}` });
    expect([refused.status, refused.body.code]).toEqual([403, 'insufficient_scope']);
    expectDocumented(refused, 'GET', '/v1/idempotency-keys/{key}');
  });

  it('shows a 202 as it is sent: an order still processing, nothing charged, valid against its schema (the example said saved)', async () => {
    const accepted = (doc.paths['/v1/orders']!.post!.responses['202'] as OpenAPIV3.ResponseObject).content!['application/json'];
    const example = accepted.example as Record<string, unknown>;
    expect(example).toMatchObject({ state: 'processing', paymentId: null, capturedMinor: 0 });
    expect(check.errors('POST', '/v1/orders', 202, 'application/json', example)).toEqual([]);
    // And the real 202 has the example's shape: the same fields, the same state.
    const real = await create('k-202-example', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202);
    expect(Object.keys(real.body).sort()).toEqual(Object.keys(example).sort());
    const { authorizedMinor, capturedMinor, refundedMinor, failureReason } = example;
    expect(real.body).toMatchObject({ state: 'processing', paymentId: null, authorizedMinor, capturedMinor, refundedMinor, failureReason });
  });

  it('describes every field of every body (or shows an example of it)', () => {
    const bare = Object.entries(doc.components!.schemas! as Record<string, OpenAPIV3.SchemaObject>).flatMap(([name, schema]) =>
      Object.entries(schema.properties ?? {})
        .filter(([, property]) => !('description' in property && property.description) && !('example' in property))
        .map(([field]) => `${name}.${field}`),
    );
    expect(bare).toEqual([]);
  });
});
