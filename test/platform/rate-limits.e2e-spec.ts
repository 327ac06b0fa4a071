// The rate limits (issue 13, item 2): one tenant sending keys it never reuses,
// or keys that are not keys at all, must not grow the process's memory beyond
// what its tenant limit allows; limits apply in order, tenant first.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ThrottlerStorage } from '@nestjs/throttler';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RATE_LIMIT_WINDOW_MS } from '../../src/auth/rate-limit.js';
import type { SlidingWindowCounterStorage } from '../../src/auth/rate-limit.storage.js';
import { auth, startApp, type TestApp } from '../support/test-app.js';

const PER_TENANT = 300;
const PER_KEY = 5;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function retainedHeap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('rate limits: bounded memory', () => {
  let t: TestApp;
  let storage: SlidingWindowCounterStorage;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_rate_limits',
      env: { RATE_LIMIT_PER_TENANT_PER_MINUTE: String(PER_TENANT), RATE_LIMIT_PER_KEY_PER_MINUTE: String(PER_KEY) },
    });
    storage = t.app.get(ThrottlerStorage);
  });
  afterAll(async () => t.close());

  /** A keyed POST that passes the limits and the key check, then stops at validation (400): no store work. */
  const post = (key: string, tenant: 'acme' | 'globex') =>
    t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', key).send({ not: 'an order' });

  it('keeps nothing of keys that are not keys, and nothing past the tenant limit', async () => {
    const before = retainedHeap();
    const statuses: number[] = [];
    for (let i = 0; i < 1_500; i++) {
      // 8 kB: not a valid key (1-255 characters), the kind that used to be stored raw, per request.
      statuses.push((await post(`${i}-${'x'.repeat(8_000)}`, 'acme')).status);
    }
    const grown = retainedHeap() - before;
    process.stdout.write(`rate limits: ${(grown / 1024 / 1024).toFixed(1)} MB retained after 1,500 requests with 8 kB keys\n`);
    expect(statuses.filter((status) => status === 400)).toHaveLength(PER_TENANT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(1_500 - PER_TENANT);
    // The old limiter kept ~12 MB here (1,500 raw 8 kB keys); what remains is the tenant's window.
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    expect([...storage.storage.keys()]).toEqual(['tenant:acme']);
  });

  it('tracks valid keys as fixed-size digests, only those the tenant limit let through', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 1_000; i++) statuses.push((await post(`${i}-${'k'.repeat(250)}`, 'globex')).status);
    expect(statuses.filter((status) => status === 400)).toHaveLength(PER_TENANT);
    const keyRecords = [...storage.storage.keys()].filter((key) => key.startsWith('key:globex:'));
    expect(keyRecords).toHaveLength(PER_TENANT);
    expect(Math.max(...keyRecords.map((key) => key.length))).toBeLessThan(64);
    // Idle records go with their windows: the sweep the storage runs every minute, run two windows later.
    storage.evictIdleRecords(Date.now() + 2 * RATE_LIMIT_WINDOW_MS);
    expect(storage.storage.size).toBe(0);
  });
});

describe('rate limits: which requests count', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_rate_limits_scope',
      env: { RATE_LIMIT_PER_TENANT_PER_MINUTE: '20', RATE_LIMIT_PER_KEY_PER_MINUTE: '2' },
    });
  });
  // Each test starts with empty windows: a count must not depend on what an earlier test sent.
  beforeEach(() => {
    const storage: SlidingWindowCounterStorage = t.app.get(ThrottlerStorage);
    storage.evictIdleRecords(Date.now() + 2 * RATE_LIMIT_WINDOW_MS);
  });
  afterAll(async () => t.close());

  it('limits keys only on idempotent routes: an Idempotency-Key header on a GET is not a key', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await t.http().get('/v1/orders').set(auth()).set('Idempotency-Key', 'k-on-get')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it('answers 429 problem+json with Retry-After for the key, then for the tenant, and counts both exactly', async () => {
    const hammer = () => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-hot').send({ not: 'an order' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await hammer()).status);
    expect(statuses).toEqual([400, 400, 429]);
    const limited = await hammer();
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(limited.body).toMatchObject({
      status: 429,
      code: 'rate_limited',
      detail: 'Too many requests for this idempotency key; retry later.',
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);

    // 4 keyed POSTs so far in this test's window: 16 more requests reach the tenant limit of 20.
    const more = [];
    for (let i = 0; i < 17; i++) more.push((await t.http().get('/v1/orders').set(auth())).status);
    expect(more.filter((status) => status === 429)).toHaveLength(1);
    const tenantLimited = await t.http().get('/v1/orders').set(auth());
    expect(tenantLimited.body).toMatchObject({ code: 'rate_limited', detail: 'Too many requests for this tenant; retry later.' });
    await t.http().get('/v1/orders').set(auth('globex')).expect(200);
    await t.http().get('/health/live').expect(200);

    const metrics = (await t.http().get('/metrics')).text;
    expect(metrics).toContain('rate_limited_requests_total{limit="key"} 2');
    expect(metrics).toContain('rate_limited_requests_total{limit="tenant"} 2');
  });
});

// Security review finding #13: the package's default storage kept one expiry per hit and threw a
// RangeError (a 500) from Math.min(...hits) above ~120k hits in a window; its cost grew with the limit.
describe('rate limits: the highest configurable limit', () => {
  const LIMIT = 1_000_000;
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_rate_limits_high',
      env: { RATE_LIMIT_PER_TENANT_PER_MINUTE: String(LIMIT), RATE_LIMIT_PER_KEY_PER_MINUTE: '0' },
    });
  });
  afterAll(async () => t.close());

  it('answers 429 (not 500) at 1,000,000 per minute, with one record for the tenant', async () => {
    const storage: SlidingWindowCounterStorage = t.app.get(ThrottlerStorage);
    await t.http().get('/v1/orders').set(auth()).expect(200);
    // The rest of the window's hits, straight into the storage the guard uses (over HTTP it would take minutes).
    for (let i = 1; i < LIMIT - 1; i++) await storage.increment('tenant:acme', RATE_LIMIT_WINDOW_MS, LIMIT);
    await t.http().get('/v1/orders').set(auth()).expect(200);
    const limited = await t.http().get('/v1/orders').set(auth());
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'rate_limited', detail: 'Too many requests for this tenant; retry later.' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await t.http().get('/v1/orders').set(auth('globex')).expect(200);
    expect(storage.storage.get('tenant:acme')).toMatchObject({ previous: 0, current: LIMIT });
  });
});
