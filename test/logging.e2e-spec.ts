// The request log of the real process: one JSON line per request with the
// request id, tenant, operation, hashed key, status and duration - and never
// a raw Idempotency-Key, an API secret or a card token.
import { afterAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { ACME_SECRET, killAllServices, orderBody, pollUntil, postOrder, scenarioDbName, startService } from './support/service-process.js';

describe('request logs', () => {
  afterAll(async () => killAllServices());

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
});
