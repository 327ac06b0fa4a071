// A full Redis (maxmemory + noeviction, the policy compose and the cache-outage runbook prescribe) must not
// block erasures (issue 49 item 6). One tenant's ordinary traffic fills a real redis-server started with a tiny
// maxmemory; another tenant's erasure still succeeds, its records marked before the commit (no stale replay),
// and the refusals of a full Redis are counted as `full`, which an alert reads.
import { idempotencyConfig, type IdempotencyConfig } from '../../src/config/config.tokens.js';
import { RedisKeys } from '@idempotent-orders/nest-idempotency/testing';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { findRedisServer, startRedisServer, type RedisServer } from '../../bench/redis-server.js';
import { describeMode, redisMode } from '../support/store-modes.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const DB = 'test_erasure_redis_full';
const found = findRedisServer();
const mode = 'missing' in found ? { ...redisMode(), skip: found.missing } : redisMode();
/** A bound on the traffic that fills it: about 1-3 kB per finished key, and ROOM_BYTES of room left after the boot. */
const MAX_FILL_ORDERS = 400;
/**
 * The room left above what Redis holds once the service is up: a few dozen large finished keys (the emulator is
 * slow). Large, so that cached answers fill it as in production (~3 kB each, by the thousand), not Redis's own
 * buffers, which no erasure can free.
 */
const ROOM_BYTES = 400 * 1024;
/** A large order (100 lines), so a few dozen answers fill the room. */
const LARGE_ITEMS = Array.from({ length: 100 }, (_, i) => ({
  sku: `sku_${String(i).padStart(3, '0')}_${'x'.repeat(56)}`,
  quantity: 1,
  unitPriceMinor: 100,
}));
/** Creates in flight at once while filling. */
const FILLERS = 4;

describeMode(mode, 'erasure on a full Redis (maxmemory + noeviction)', () => {
  let redis: RedisServer;
  let client: Redis;
  let t: TestApp;
  let keys: RedisKeys;

  beforeAll(async () => {
    redis = await startRedisServer(undefined, ['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction']);
    client = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    t = await startApp({
      dbName: DB,
      env: {
        REDIS_URL: redis.url,
        REDIS_NAMESPACE: `idem:${DB}`,
        // What is tested is a full Redis, not a slow one: the loaded machine must not turn a call into a timeout.
        REDIS_COMMAND_TIMEOUT_MS: '1000',
      },
    });
    keys = new RedisKeys(`idem:${DB}`, t.app.get<IdempotencyConfig>(idempotencyConfig.KEY).digestKey);
  });
  afterAll(async () => {
    await t?.close();
    client?.disconnect();
    await redis?.stop();
  });

  const post = (tenant: 'acme' | 'globex', key: string, customerId: string) =>
    t
      .http()
      .post('/v1/orders')
      .set(auth(tenant))
      .set('Idempotency-Key', key)
      .send(orderBody({ customerId, ...(tenant === 'globex' ? { items: LARGE_ITEMS } : {}) }));
  /** A create, retried under its key while the loaded emulator answers 503 (retryable, as documented). */
  const created = async (tenant: 'acme' | 'globex', key: string, customerId: string) => {
    let res = await post(tenant, key, customerId);
    for (let retry = 0; res.status === 503 && retry < 5; retry++) {
      await new Promise((resolve) => setTimeout(resolve, 1000 * Number(res.headers['retry-after'] ?? 1)));
      res = await post(tenant, key, customerId);
    }
    return res;
  };
  const isFull = async () =>
    client.set('probe', 'x'.repeat(64)).then(
      () => false,
      (error: Error) => /^OOM /.test(error.message),
    );
  const usedMemory = async () => Number((await client.info('memory')).match(/used_memory:(\d+)/)?.[1]);
  const metric = async (pattern: RegExp) => Number(pattern.exec((await t.http().get('/metrics').expect(200)).text)?.[1] ?? 0);

  it("another tenant's traffic fills Redis; creates go on at 201, and an erasure still succeeds with its records marked", async () => {
    const recordId = (key: string) => `acme:orders-service:orders.create:key:${key}`;
    // The customer's first order is cached while there is room; its second arrives once Redis is full.
    await post('acme', 'full-a-1', 'cus_full_a').expect(201);
    // Tighter once the service has used Redis (its connections and scripts take their share, which differs between
    // builds): ROOM_BYTES left for the other tenant's traffic to fill.
    await client.config('SET', 'maxmemory', String(Math.min(2048 * 1024, (await usedMemory()) + ROOM_BYTES)));
    let filled = 0;
    while (!(await isFull()) && filled < MAX_FILL_ORDERS) {
      const batch = Array.from({ length: FILLERS }, (_, i) => filled + i);
      for (const res of await Promise.all(batch.map((n) => created('globex', `fill-${n}`, `cus_fill_${n}`)))) expect(res.status).toBe(201);
      filled += FILLERS;
    }
    // Filled by the other tenant's creates, not by the set-up.
    expect(filled).toBeGreaterThan(0);
    expect(await isFull()).toBe(true);
    await post('acme', 'full-a-2', 'cus_full_a').expect(201);
    expect(await metric(/idempotency_cache_requests_total\{call="store",result="full"\} (\d+)/)).toBeGreaterThan(0);

    let erased = await t.http().delete('/v1/customers/cus_full_a/data').set(auth());
    // The loaded emulator may refuse a transaction (503 store_unavailable, nothing erased): the erasure is safe to repeat.
    for (let retry = 0; erased.status === 503 && erased.body.code === 'store_unavailable' && retry < 3; retry++)
      erased = await t.http().delete('/v1/customers/cus_full_a/data').set(auth());
    expect([erased.status, erased.body.code]).toEqual([200, undefined]);
    expect(erased.body.counts).toMatchObject({ idempotencyRecords: 2, orders: 2 });
    // Committed in MongoDB, Redis told: both records marked (a marked record is a miss), the cached answer gone.
    expect(await t.db.collection('orders').countDocuments({ customerId: 'cus_full_a' })).toBe(0);
    expect(await t.db.collection('erasures').countDocuments({ cacheInvalidatedAt: { $type: 'date' } })).toBe(1);
    for (const key of ['full-a-1', 'full-a-2']) expect(await client.exists(keys.guard(recordId(key)))).toBe(1);
    expect(await client.exists(keys.entry(recordId('full-a-1')))).toBe(0);
    for (const key of ['full-a-1', 'full-a-2']) {
      const replay = await post('acme', key, 'cus_full_a').expect(410);
      expect(replay.text).not.toContain('cus_full_a');
    }
    // Room was made from cached answers only (copies of MongoDB's): the other tenant's keys still replay their 201.
    await post('globex', 'fill-0', 'cus_fill_0').expect(201);
    await post('globex', `fill-${filled - 1}`, `cus_fill_${filled - 1}`).expect(201);
  });
});
