import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

describe('HTTP pipeline (foundation)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_app' });
  });
  afterAll(async () => t.close());

  it('answers liveness and readiness (store, primary, indexes)', async () => {
    await t.http().get('/health/live').expect(200);
    const ready = await t.http().get('/health/ready').expect(200);
    expect(ready.body.info.mongodb.status).toBe('up');
    expect(ready.body.info.indexes.status).toBe('up');
  });

  it('builds the declared indexes at boot, not through autoIndex', async () => {
    const names = (await t.db.collection('idempotency_records').indexes()).map((index) => index.name);
    expect(names).toEqual(expect.arrayContaining(['purge_ttl', 'reaper_window_scan', 'pending_age']));
    const payments = await t.db.collection('payments').indexes();
    expect(payments.find((index) => index.name === 'charge_key_unique')?.unique).toBe(true);
  });

  it('answers with a request id of its own, whatever the caller sends as X-Request-Id (security review 2, #19)', async () => {
    // A caller could reuse another request's id to muddy the trail: its id is only logged beside ours (logging.e2e-spec).
    const given = (await t.http().get('/health/live').set('X-Request-Id', 'trace-42')).headers['x-request-id'];
    expect(given).toMatch(/^[0-9a-f-]{36}$/);
    const replaced = (await t.http().get('/health/live').set('X-Request-Id', 'bad id with spaces and {braces}')).headers['x-request-id'];
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    expect(replaced).not.toBe(given);
  });

  it('answers an unknown route with problem+json 404', async () => {
    const res = await t.http().get('/v1/nothing-here').set(auth()).expect(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found', title: 'Not Found' });
  });

  it('answers malformed JSON with 400 malformed_json and creates nothing', async () => {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-malformed')
      .set('Content-Type', 'application/json')
      .send('{"customerId": ')
      .expect(400);
    expect(res.body.code).toBe('malformed_json');
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });

  it('answers a 2 MB body with 413 and stays up', async () => {
    const big = JSON.stringify({ ...orderBody(), pad: 'x'.repeat(2 * 1024 * 1024) });
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-big')
      .set('Content-Type', 'application/json')
      .send(big);
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    await t.http().get('/health/live').expect(200);
  });

  it('refuses non-JSON bodies with 415', async () => {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-text')
      .set('Content-Type', 'text/plain')
      .send('hello');
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('refuses unknown fields with 400 validation_failed', async () => {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-extra')
      .send({ ...orderBody(), admin: true })
      .expect(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors).toContain('property admin should not exist');
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
  });

  it('serves the OpenAPI document with the idempotency contract', async () => {
    const res = await t.http().get('/docs/json').expect(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/orders',
        '/v1/orders/{id}',
        '/v1/orders/{id}/ledger',
        '/v1/idempotency-keys/{key}',
        '/v1/customers/{customerId}/data',
      ]),
    );
    const create = res.body.paths['/v1/orders'].post;
    expect(create.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: true })]),
    );
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '402', '409', '422', '429', '503']));
    expect(Object.keys(create.responses['201'].headers)).toEqual(
      expect.arrayContaining(['Idempotent-Replayed', 'Idempotency-Expires', 'Location']),
    );
    expect(create.responses['409'].headers['Retry-After']).toBeDefined();
    expect(res.body.components.schemas).toHaveProperty('Problem');
    expect(res.body.components.schemas).toHaveProperty('CreateOrderDto');
  });
});
