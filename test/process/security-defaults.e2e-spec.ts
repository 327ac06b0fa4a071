// Security review 2, low items on the HTTP edge: strangers are refused before
// their body is parsed (#12) and before they can tell routes from typos
// (#19); a 404 echoes neither the URL nor its query string (#10); erasure and
// key admin need their own scopes (#9); a 410 says "Gone" (#19); metrics,
// readiness details and docs are not public on the API port (#6).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import {
  freePort,
  httpRequest,
  killAllServices,
  orderBody as processOrderBody,
  spawnService,
  startService,
} from '../support/service-process.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const ORDERS_ONLY = 'acme-orders-secret-0123456789';
const PRIVACY = 'acme-privacy-secret-0123456789';
const ADMIN = 'acme-admin-secret-0123456789';
const bearer = (secret: string) => ({ Authorization: `Bearer ${secret}` });

describe('the HTTP edge refuses strangers early and says little', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'security_defaults_test',
      env: { API_KEYS: `acme:${ORDERS_ONLY},acme:${PRIVACY}:privacy,acme:${ADMIN}:admin` },
    });
  });
  afterAll(async () => t.close());
  beforeEach(async () => t.reset());

  it('answers 401 to an unauthenticated body before parsing it: malformed or oversized, it is still 401 (#12)', async () => {
    const malformed = await t
      .http()
      .post('/v1/orders')
      .set('Idempotency-Key', 'k-early')
      .set('Content-Type', 'application/json')
      .send('{"customerId": "cus_1", ');
    expect(malformed.status).toBe(401);
    expect(malformed.body).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(malformed.headers['content-type']).toContain('application/problem+json');

    const oversized = await t
      .http()
      .post('/v1/orders')
      .set('Content-Type', 'application/json')
      .send(`{"x":"${'a'.repeat(200_000)}"}`);
    expect(oversized.status).toBe(401);
    // A wrong key is a stranger too; with the right key the same malformed body is the client's 400.
    const wrongKey = await t
      .http()
      .post('/v1/orders')
      .set(bearer('not-a-key-0123456789'))
      .set('Content-Type', 'application/json')
      .send('{');
    expect(wrongKey.status).toBe(401);
    const known = await t
      .http()
      .post('/v1/orders')
      .set(bearer(ORDERS_ONLY))
      .set('Idempotency-Key', 'k-early')
      .set('Content-Type', 'application/json')
      .send('{');
    expect(known.status).toBe(400);
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
  });

  it('does not tell a stranger which routes exist; a 404 echoes neither path nor query (#19, #10)', async () => {
    for (const path of ['/v1/nope/x?api_key=SECRET123', '/v1/orders/ord_1/nothing']) {
      const res = await t.http().get(path);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
    const existing = await t.http().get('/v1/orders');
    expect(existing.status).toBe(401);

    const notFound = await t.http().get('/v1/nope/secret-token-in-path?api_key=SECRET123').set(bearer(ORDERS_ONLY));
    expect(notFound.status).toBe(404);
    expect(notFound.body).toMatchObject({ status: 404, code: 'not_found', detail: 'No route matches this method and path.' });
    expect(notFound.text).not.toMatch(/SECRET123|secret-token-in-path|nope/);
    // Public routes stay public.
    expect((await t.http().get('/health/live')).status).toBe(200);
  });

  it('needs the privacy scope to erase a customer and the admin scope for key admin; an orders key changes nothing (#9)', async () => {
    const created = await t
      .http()
      .post('/v1/orders')
      .set(bearer(ORDERS_ONLY))
      .set('Idempotency-Key', 'k-scoped')
      .send(orderBody({ customerId: 'cus_scoped' }));
    expect(created.status).toBe(201);

    const refused = await t.http().delete('/v1/customers/cus_scoped/data').set(bearer(ORDERS_ONLY));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'insufficient_scope', title: 'Forbidden' });
    expect(await t.db.collection('erasures').countDocuments()).toBe(0);
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ customerId: 'cus_scoped' });

    for (const secret of [ORDERS_ONLY, PRIVACY]) {
      expect((await t.http().get('/v1/idempotency-keys/k-scoped').set(bearer(secret))).status).toBe(403);
      expect((await t.http().post('/v1/idempotency-keys/k-scoped/release').set(bearer(secret))).status).toBe(403);
    }
    expect((await t.http().delete('/v1/customers/cus_scoped/data').set(bearer(ADMIN))).status).toBe(403);
    expect(await t.db.collection('erasures').countDocuments()).toBe(0);

    const key = await t.http().get('/v1/idempotency-keys/k-scoped').set(bearer(ADMIN));
    expect(key.status).toBe(200);
    // Answers with customer data are never cached (#19).
    const order = await t.http().get(`/v1/orders/${created.body.id}`).set(bearer(ORDERS_ONLY));
    expect(order.status).toBe(200);
    for (const res of [created, key, order]) expect(res.headers['cache-control']).toBe('no-store');
    const erased = await t.http().delete('/v1/customers/cus_scoped/data').set(bearer(PRIVACY));
    expect(erased.status).toBe(200);
    expect(await t.db.collection('erasures').countDocuments()).toBe(1);
    // Orders routes need the orders scope: a privacy-only key cannot create or list orders.
    expect((await t.http().get('/v1/orders').set(bearer(PRIVACY))).status).toBe(403);

    // The erased key's replay is a 410 titled "Gone", not "Error".
    const replay = await t
      .http()
      .post('/v1/orders')
      .set(bearer(ORDERS_ONLY))
      .set('Idempotency-Key', 'k-scoped')
      .send(orderBody({ customerId: 'cus_scoped' }));
    expect(replay.status).toBe(410);
    expect(replay.body.title).toBe('Gone');
  });
});

describe('/metrics, /health/ready and /docs on the API port (#6)', () => {
  // A deployment: a real store (the run's MONGODB_URI) and NODE_ENV other than test.
  const deployed = (extra: Record<string, string>) => ({
    NODE_ENV: 'production',
    IDEMPOTENCY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PRIVACY_DIGEST_KEY: randomBytes(32).toString('base64'),
    ...extra,
  });

  it('serves metrics on their own listener, not the API port; liveness stays public; readiness names no replica set; no docs in production', async () => {
    const metricsPort = await freePort();
    const t = await startApp({
      dbName: 'security_metrics_test',
      env: deployed({ METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1' }),
    });
    try {
      const onApi = await t.http().get('/metrics');
      expect(onApi.status).toBe(404);
      expect(onApi.text).not.toContain('nodejs_version_info');
      const scraped = await httpRequest(`http://127.0.0.1:${metricsPort}`, { method: 'GET', path: '/metrics' });
      expect(scraped.status).toBe(200);
      expect(scraped.text).toContain('nodejs_version_info');
      expect(scraped.text).toContain('http_requests_total{route="/metrics",method="GET",status="404"} 1');
      expect((await httpRequest(`http://127.0.0.1:${metricsPort}`, { method: 'GET', path: '/v1/orders' })).status).toBe(404);

      expect((await t.http().get('/health/live')).status).toBe(200);
      const ready = await t.http().get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.info).toEqual({
        mongodb: { status: 'up' },
        indexes: { status: 'up' },
        events: { status: 'up', transport: 'in-process', degraded: false },
      });

      expect((await t.http().get('/docs/json')).status).toBe(401);
      expect((await t.http().get('/docs/json').set(auth())).status).toBe(404);
    } finally {
      await t.close();
    }
    // Closed with the app: the port is free again.
    await expect(httpRequest(`http://127.0.0.1:${metricsPort}`, { method: 'GET', path: '/metrics', timeoutMs: 2_000 })).rejects.toThrow();
  });

  it('with METRICS_TOKEN and no METRICS_PORT, /metrics on the API port needs the token', async () => {
    const token = 'metrics-token-0123456789abcdef0123456789';
    const t = await startApp({ dbName: 'security_metrics_token_test', env: deployed({ METRICS_TOKEN: token, DOCS_ENABLED: 'true' }) });
    try {
      expect((await t.http().get('/metrics')).status).toBe(401);
      expect((await t.http().get('/metrics').set(bearer('metrics-token-0123456789abcdef012345678X'))).status).toBe(401);
      const scraped = await t.http().get('/metrics').set(bearer(token));
      expect(scraped.status).toBe(200);
      expect(scraped.text).toContain('http_requests_total');
      expect((await t.http().get('/docs/json')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('dev defaults in the real process (#3)', () => {
  afterAll(async () => killAllServices());
  const bare = { NODE_ENV: undefined, API_KEYS: undefined, HOST: undefined, IDEMPOTENCY_ENCRYPTION_KEY: undefined };

  it('npm start as in the quick start (nothing set) runs the embedded store with the dev tenant, on loopback', async () => {
    const service = await startService({ env: { ...bare, MONGODB_URI: undefined, MONGO_BACKEND: 'emulator', LOG_LEVEL: 'info' } });
    const created = await httpRequest(service.baseUrl, {
      method: 'POST',
      path: '/v1/orders',
      headers: { Authorization: 'Bearer dev-secret-change-me', 'Idempotency-Key': 'k-dev' },
      body: processOrderBody(),
    });
    expect(created.status).toBe(201);
    // Logged before the 201, but lines reach stdout in batches: wait for it rather than race the flush.
    const listening = `Listening on http://127.0.0.1:${service.port}`;
    await expect(service.waitForStdout(listening)).resolves.toContain(listening);
  });

  it('a real MONGODB_URI without NODE_ENV or keys exits 1 naming what is missing, and prints no URI password', async () => {
    const uri = new URL(process.env.MONGODB_URI!);
    uri.username = 'admin';
    uri.password = 'S3cretPassw0rd';
    const service = await spawnService({ env: { ...bare, MONGODB_URI: uri.toString() } });
    await expect(service.waitForExit(15_000)).resolves.toEqual({ code: 1, signal: null });
    const text = service.stdout() + service.stderr();
    expect(text).toMatch(/API_KEYS: required when MONGODB_URI is set/);
    expect(text).toMatch(/IDEMPOTENCY_ENCRYPTION_KEY: required when MONGODB_URI is set/);
    expect(text).not.toContain('S3cretPassw0rd');
  });
});
