import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { resolveMongoBackend, type MongoBackend } from '../../src/database/embedded-mongo.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/**
 * Fail closed: with its store gone the service answers 503 + Retry-After
 * within seconds (no hanging requests, no processing without the record),
 * and readiness goes down. Uses a private embedded server it can stop.
 */
describe('store outage', () => {
  let backend: MongoBackend;
  let t: TestApp;

  beforeAll(async () => {
    backend = await resolveMongoBackend({ PATH: process.env.PATH, MONGOMS_SYSTEM_BINARY: process.env.MONGOMS_SYSTEM_BINARY });
    t = await startApp({ dbName: 'test_outage', env: { MONGODB_URI: backend.uri, MONGODB_SERVER_SELECTION_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => {
    await t.close().catch(() => undefined);
    await backend.stop();
  });

  it('answers 503 store_unavailable with Retry-After, quickly, and reports not ready', async () => {
    await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-before').send(orderBody()).expect(201);
    await backend.stop();

    const started = Date.now();
    const res = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-during').send(orderBody());
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('store_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.text).not.toMatch(/Mongo|ECONNREFUSED|at /);
    expect(Date.now() - started).toBeLessThan(8000);

    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ code: 'not_ready', details: { mongodb: { status: 'down' } } });
    await t.http().get('/health/live').expect(200);
  });
});
