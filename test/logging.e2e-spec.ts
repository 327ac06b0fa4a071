// The request log of the real process: one JSON line per request with the
// request id, tenant, operation, hashed key, status and duration - and never
// a raw Idempotency-Key, an API secret or a card token.
import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  ACME_SECRET,
  httpRequest,
  killAllServices,
  orderBody,
  pollUntil,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
} from './support/service-process.js';

describe('request logs', () => {
  afterAll(async () => killAllServices());

  it('LOG_FORMAT=pretty: readable lines for a person, the same fields, still no secrets', async () => {
    const service = await startService({
      dbName: scenarioDbName('logs-pretty'),
      label: 'logs-pretty',
      env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' },
    });
    const key = 'pretty-private-key-4242';
    expect((await postOrder(service.baseUrl, key)).status).toBe(201);
    const keyHash = createHash('sha256').update(key).digest('hex').slice(0, 16);
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
    const service = await startService({ dbName: scenarioDbName('logs'), label: 'logs', env: { LOG_LEVEL: 'info' } });
    const key = 'very-private-key-4242';
    const created = await postOrder(service.baseUrl, key, orderBody({ paymentMethod: { token: 'tok_visa' } }));
    expect(created.status).toBe(201);
    const declined = await postOrder(service.baseUrl, 'another-private-key', orderBody({ paymentMethod: { token: 'tok_decline' } }));
    expect(declined.status).toBe(402);

    const keyHash = createHash('sha256').update(key).digest('hex').slice(0, 16);
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
    expect(line).toMatchObject({ tenant: 'acme', operation: 'orders.create', res: { statusCode: 201 } });
    expect(typeof (line.req as { id: unknown }).id).toBe('string');
    expect(typeof line.responseTime).toBe('number');

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
        return parsed.some((entry) => entry.refusalsNotLogged) && parsed;
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
});
