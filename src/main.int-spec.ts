/**
 * The built service as a person runs it: the banner once it listens, Nest's
 * module and route lines kept out of an info-level boot, and a SIGTERM that
 * says what it drained - a request in flight answered, then the exit logged.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import {
  connectMongo,
  databasesOf,
  killAllServices,
  ordersForKey,
  postOrder,
  scenarioDbName,
  sleep,
  startService,
} from '../test/support/service-process.js';

describe('main.ts: the boot a person reads, the shutdown it logs', () => {
  afterAll(async () => killAllServices());

  it('prints the banner, keeps framework chatter at debug, and logs the drained request on SIGTERM', async () => {
    const service = await startService({
      dbName: scenarioDbName('main_boot'),
      // Each charge takes 3 s at the provider: a request is still in flight when the signal comes.
      env: { LOG_LEVEL: 'info', PAYMENT_SIMULATOR_LATENCY_MS: '3000', SHUTDOWN_GRACE_MS: '15000' },
    });
    // Ready answers before the log is on stdout: lines are written in batches, at least every 200 ms (logging.module.ts).
    const boot = await service.waitForStdout('Token    ');
    expect(boot).toContain(`Listening on http://127.0.0.1:${service.port} (NODE_ENV=test): idempotent orders is ready`);
    expect(boot).toContain(`Docs     http://127.0.0.1:${service.port}/docs`);
    expect(boot).toContain('Store    MONGODB_URI');
    // Nest's InstanceLoader / RoutesResolver lines are debug now: none at info.
    expect(boot).not.toMatch(/dependencies initialized|Mapped \{/);
    // API_KEYS is set: no secret in the banner.
    expect(boot).toContain('Token    one of the 1 API_KEYS tenants');
    expect(boot).not.toContain('acme-secret');

    const inFlight = postOrder(service.baseUrl, 'k-drained', undefined, 20_000);
    await sleep(1_000);
    service.kill('SIGTERM');
    const answer = await inFlight;
    expect(answer.status).toBe(201);
    await expect(service.waitForExit(20_000)).resolves.toEqual({ code: 0, signal: null });
    const shutdown = service.stdout();
    expect(shutdown).toMatch(/SIGTERM: stopping - no new connections, draining 1 request\(s\) in flight/);
    expect(shutdown).toMatch(/Stopped after SIGTERM in \d+ ms: 1 request\(s\) drained, exit 0/);
    // The drained request finished its work: its order is in the store, saved.
    const client = await connectMongo();
    try {
      const orders = await ordersForKey(databasesOf(client, service).db, 'k-drained');
      expect(orders.map((order) => order.state)).toEqual(['saved']);
    } finally {
      await client.close();
    }
  });
});
