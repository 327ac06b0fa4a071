// The request log of the real process: one JSON line per request with the
// request id, tenant, operation, hashed key, status and duration - and never
// a raw Idempotency-Key, an API secret or a card token.
import { afterAll, describe, expect, it } from '@jest/globals';
import { logDigest, logDigestKey } from '../../src/logging/log-digest.js';
import {
  ACME_AUTH,
  ACME_SECRET,
  httpRequest,
  killAllServices,
  orderBody,
  pollUntil,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
} from '../support/service-process.js';

// The privacy digest key the services below run with: a subkey of it keys the digests of keys in their logs.
const DIGEST_KEY = Buffer.alloc(32, 9);
const LOG_ENV = { PRIVACY_DIGEST_KEY: DIGEST_KEY.toString('base64') };
const keyDigest = (tenant: string, key: string) => logDigest(logDigestKey(DIGEST_KEY), tenant, key);
const GLOBEX_SECRET = 'globex-secret-0123456789';

describe('request logs', () => {
  afterAll(async () => killAllServices());

  it('LOG_FORMAT=pretty: readable lines for a person, the same fields, still no secrets', async () => {
    const service = await startService({
      dbName: scenarioDbName('logs-pretty'),
      label: 'logs-pretty',
      env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', ...LOG_ENV },
    });
    const key = 'pretty-private-key-4242';
    expect((await postOrder(service.baseUrl, key)).status).toBe(201);
    const keyHash = keyDigest('acme', key);
    const line = await pollUntil(
      async () =>
        service
          .stdout()
          .split('\n')
          .find((text) => text.includes(keyHash)),
      5_000,
      () => service.describe(),
    );
    expect(line).not.toMatch(/^\{/);
    expect(line).toMatch(/INFO.*request completed/);
    expect(line).toContain('orders.create');
    expect(service.stdout()).not.toContain(key);
  });

  it('logs one structured line per request, with the key hashed and no secrets', async () => {
    const service = await startService({ dbName: scenarioDbName('logs'), label: 'logs', env: { LOG_LEVEL: 'info', ...LOG_ENV } });
    const key = 'very-private-key-4242';
    const created = await postOrder(service.baseUrl, key, orderBody({ paymentMethod: { token: 'tok_visa' } }));
    expect(created.status).toBe(201);
    const declined = await postOrder(service.baseUrl, 'another-private-key', orderBody({ paymentMethod: { token: 'tok_decline' } }));
    expect(declined.status).toBe(402);

    const keyHash = keyDigest('acme', key);
    const line = await pollUntil(
      async () =>
        service
          .stdout()
          .split('\n')
          .filter((text) => text.startsWith('{'))
          .map((text) => JSON.parse(text) as Record<string, unknown>)
          .find((entry) => entry.idempotencyKeyHash === keyHash && entry.msg === 'request completed'),
      5_000,
      () => service.describe(),
    );
    expect(line).toMatchObject({ tenant: 'acme', operation: 'orders.create', route: '/v1/orders', res: { statusCode: 201 } });
    expect(line.replayed).toBeUndefined();
    expect(typeof (line.req as { id: unknown }).id).toBe('string');
    expect(typeof line.responseTime).toBe('number');

    // A replay's line says so: an operator tells a retry answered from the record from a first request.
    const replay = await postOrder(service.baseUrl, key, orderBody({ paymentMethod: { token: 'tok_visa' } }));
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const replayLine = await pollUntil(
      async () =>
        service
          .stdout()
          .split('\n')
          .filter((text) => text.startsWith('{'))
          .map((text) => JSON.parse(text) as Record<string, unknown>)
          .find((entry) => entry.idempotencyKeyHash === keyHash && entry.replayed === true),
      5_000,
      () => service.describe(),
    );
    expect(replayLine).toMatchObject({
      tenant: 'acme',
      apiKeyId: expect.any(String),
      operation: 'orders.create',
      res: { statusCode: 201 },
    });

    const everything = service.stdout() + service.stderr();
    for (const secret of [key, 'another-private-key', ACME_SECRET, 'tok_visa', 'tok_decline']) {
      expect(everything).not.toContain(secret);
    }
  });

  it('samples the lines of refused requests (what anyone can trigger for free) while the metrics count every one', async () => {
    const service = await startService({
      dbName: scenarioDbName('logs_refused'),
      label: 'logs-refused',
      env: { LOG_LEVEL: 'info', LOG_REFUSED_REQUESTS_PER_SECOND: '5' },
    });
    const refusals = 400;
    const started = Date.now();
    for (let batch = 0; batch < refusals / 20; batch++) {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () =>
          httpRequest(service.baseUrl, { method: 'POST', path: '/v1/orders', body: orderBody() }).then((res) => res.status),
        ),
      );
      expect(new Set(statuses)).toEqual(new Set([401]));
    }
    const seconds = Math.ceil((Date.now() - started) / 1000) + 1;
    await sleep(1_100);
    // The first refusal of a new second is logged again, with the count of those skipped before it.
    expect((await httpRequest(service.baseUrl, { method: 'POST', path: '/v1/orders', body: orderBody() })).status).toBe(401);

    const metrics = (await httpRequest(service.baseUrl, { method: 'GET', path: '/metrics' })).text;
    expect(metrics).toContain(`http_requests_total{route="/v1/orders",method="POST",status="401"} ${refusals + 1}`);

    const lines = await pollUntil(
      async () => {
        const parsed = service
          .stdout()
          .split('\n')
          .filter((text) => text.startsWith('{'))
          .map((text) => JSON.parse(text) as { level: number; msg: string; res?: { statusCode: number }; refusalsNotLogged?: number })
          .filter((entry) => entry.res?.statusCode === 401);
        // Lines reach stdout in batches (at most LOG_FLUSH_MS late): wait until the last refusal's line is out.
        const accounted = parsed.length + parsed.reduce((sum, entry) => sum + (entry.refusalsNotLogged ?? 0), 0);
        return parsed.some((entry) => entry.refusalsNotLogged) && accounted >= refusals + 1 && parsed;
      },
      5_000,
      () => service.describe(),
    );
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(5 * (seconds + 1));
    expect(lines.every((entry) => entry.level === 30)).toBe(true);
    // Logged + skipped = every refusal.
    expect(lines.length + lines.reduce((sum, entry) => sum + (entry.refusalsNotLogged ?? 0), 0)).toBe(refusals + 1);
  });

  it('keeps out of the log what an erasure removes: no customer id, raw key or query string; key digests keyed per tenant (security review 2, #5)', async () => {
    const service = await startService({
      dbName: scenarioDbName('logs_erasure'),
      label: 'logs-erasure',
      env: {
        LOG_LEVEL: 'info',
        ...LOG_ENV,
        API_KEYS: `acme:${ACME_SECRET}:orders+admin+privacy,globex:${GLOBEX_SECRET}`,
      },
    });
    const customer = 'cus_erase_me_4242';
    const key = 'shared-raw-key-4242';
    const admin = { ...ACME_AUTH };
    expect((await postOrder(service.baseUrl, key, orderBody({ customerId: customer }))).status).toBe(201);
    const globex = await httpRequest(service.baseUrl, {
      method: 'POST',
      path: '/v1/orders',
      headers: { Authorization: `Bearer ${GLOBEX_SECRET}`, 'Idempotency-Key': key },
      body: orderBody({ customerId: customer }),
    });
    expect(globex.status).toBe(201);
    expect((await httpRequest(service.baseUrl, { method: 'GET', path: `/v1/idempotency-keys/${key}`, headers: admin })).status).toBe(200);
    const release = await httpRequest(service.baseUrl, { method: 'POST', path: `/v1/idempotency-keys/${key}/release`, headers: admin });
    expect(release.status).toBe(404);
    for (const headers of [admin, {}]) {
      const res = await httpRequest(service.baseUrl, { method: 'GET', path: '/v1/nope/raw-path-4242?api_key=SECRET4242', headers });
      expect([401, 404]).toContain(res.status);
    }
    const erased = await httpRequest(service.baseUrl, {
      method: 'DELETE',
      path: `/v1/customers/${customer}/data`,
      headers: { ...admin, 'X-Request-Id': 'client-trace-4242' },
    });
    expect(erased.status).toBe(200);
    const requestId = erased.headers['x-request-id'];

    const entries = await pollUntil(
      async () => {
        const parsed = service
          .stdout()
          .split('\n')
          .filter((text) => text.startsWith('{'))
          .map((text) => JSON.parse(text) as Record<string, any>);
        const done = parsed.filter((entry) => entry.msg === 'request completed');
        return done.some((entry) => entry.route === '/v1/customers/:customerId/data') && parsed;
      },
      5_000,
      () => service.describe(),
    );
    const everything = service.stdout() + service.stderr();
    for (const leaked of [customer, key, 'raw-path-4242', 'SECRET4242', 'api_key']) expect(everything).not.toContain(leaked);
    const routes = entries.filter((entry) => entry.msg === 'request completed').map((entry) => entry.route);
    expect(routes).toEqual(
      expect.arrayContaining([
        '/v1/orders',
        '/v1/idempotency-keys/:key',
        '/v1/idempotency-keys/:key/release',
        '/v1/customers/:customerId/data',
      ]),
    );
    expect(routes).toContain('unmatched');
    // The same key of two tenants: two unrelated digests, neither the unkeyed hash of old.
    const digests = entries.filter((entry) => entry.operation === 'orders.create').map((entry) => [entry.tenant, entry.idempotencyKeyHash]);
    expect(digests).toEqual(
      expect.arrayContaining([
        ['acme', keyDigest('acme', key)],
        ['globex', keyDigest('globex', key)],
      ]),
    );
    expect(keyDigest('acme', key)).not.toBe(keyDigest('globex', key));
    // The erasure is audited: which key, which request (security review 2, #9).
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ context: 'Audit', scope: 'privacy', allowed: true, tenant: 'acme', keyId: 'acme#1', requestId }),
        // The caller's own id is logged beside ours, never instead of it.
        expect.objectContaining({
          msg: 'request completed',
          req: expect.objectContaining({ id: requestId }),
          clientRequestId: 'client-trace-4242',
        }),
        expect.objectContaining({ context: 'Audit', scope: 'admin', allowed: true, keyId: 'acme#1' }),
      ]),
    );
  });
});
