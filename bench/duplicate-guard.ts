/**
 * What the duplicate guard (issue 27 item 4, DUPLICATE_GUARD_WINDOW_SECONDS)
 * costs a create: two service processes on one store, the guard off and on
 * (every tenant), the same load on each - POST /v1/orders with a fresh key
 * AND a fresh body per request (a guarded claim that passes: one more
 * indexed upsert in the claim transaction) - and, on the guarded service,
 * blind retries (a fresh key, the same body: all but the first refused 409
 * possible_duplicate, each a rolled-back claim plus two reads by _id).
 *
 *   npm run build && node dist/bench/duplicate-guard.js [--seconds 10] [--connections 16]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { resolveMongoBackend } from '../src/database/embedded-mongo.js';
import { runLoad, type LoadMeasurement, type RequestSpec } from './load.js';
import { startService, type ServiceProcess } from './service.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TENANT = 'bench';
const SECRET = 'bench-secret-0123456789';
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` };

function body(customer: string): string {
  return JSON.stringify({
    customerId: customer,
    currency: 'USD',
    items: [{ sku: 'sku_1', quantity: 2, unitPriceMinor: 1250 }],
    paymentMethod: { token: 'tok_visa' },
  });
}

/** A fresh key per request; a fresh body too unless `sameBody`. */
function creates(prefix: string, sameBody: boolean): RequestSpec {
  let sequence = 0;
  return {
    method: 'POST',
    path: '/v1/orders',
    headers: HEADERS,
    setupRequest: (request) => {
      const n = ++sequence;
      request.headers = { ...request.headers, 'idempotency-key': `${prefix}-${n}` };
      request.body = body(sameBody ? `${prefix}-customer` : `${prefix}-customer-${n}`);
      return request;
    },
  };
}

async function measure(
  service: ServiceProcess,
  prefix: string,
  sameBody: boolean,
  connections: number,
  seconds: number,
): Promise<LoadMeasurement> {
  await runLoad({
    baseUrl: service.baseUrl,
    connections,
    durationSeconds: Math.max(1, Math.round(seconds / 3)),
    requests: [creates(`${prefix}-warm`, sameBody)],
  });
  return runLoad({ baseUrl: service.baseUrl, connections, durationSeconds: seconds, requests: [creates(prefix, sameBody)] });
}

function row(title: string, measured: LoadMeasurement): string {
  const statuses = Object.entries(measured.statusCounts)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
  return `${title.padEnd(44)} ${measured.reqPerSec.toFixed(1).padStart(8)} req/s  p50 ${String(measured.p50Ms).padStart(4)} ms  p99 ${String(measured.p99Ms).padStart(5)} ms  (${statuses})`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '16' } } });
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const backend = await resolveMongoBackend(process.env);
  const stamp = Date.now();
  const services: ServiceProcess[] = [];
  try {
    console.log(`MongoDB backend: ${backend.kind} - ${backend.description}`);
    const common = {
      root: ROOT,
      mongoUri: backend.uri,
      simulatorDbName: `bench_guard_${stamp}_payment_simulator`,
      disableIdempotency: false,
      paymentLatencyMs: 0,
      apiKeys: `${TENANT}:${SECRET}`,
      rateLimits: 'off' as const,
    };
    const off = await startService({ ...common, name: 'guard off', dbName: `bench_guard_${stamp}_off` });
    services.push(off);
    const on = await startService({
      ...common,
      name: 'guard on',
      dbName: `bench_guard_${stamp}_on`,
      env: { DUPLICATE_GUARD_WINDOW_SECONDS: '600', DUPLICATE_GUARD_TENANTS: '*' },
    });
    services.push(on);
    console.log(`${seconds} s per row (+ a third of it warm-up), ${connections} connections, rate limits off, payment latency 0 ms`);
    const results = [
      row('create, fresh key + body, guard OFF', await measure(off, `off-${stamp}`, false, connections, seconds)),
      row('create, fresh key + body, guard ON', await measure(on, `on-${stamp}`, false, connections, seconds)),
      row('blind retries (fresh key, same body), ON', await measure(on, `dup-${stamp}`, true, connections, seconds)),
    ];
    for (const line of results) console.log(line);
  } finally {
    for (const service of services) await service.stop().catch(() => undefined);
    await backend.stop();
  }
}

await main();
