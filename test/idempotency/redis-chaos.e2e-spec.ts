// Redis is only a fast path (issue 16): killing it under load must not
// break the contract. SIGKILL the redis-server while clients keep creating
// and retrying orders; the service falls back to MongoDB (time-boxed calls,
// circuit breaker), answers only 201 or the documented 409, creates and
// charges nothing twice, and keeps every ledger balanced. Once Redis is back
// and the circuit closes, replays are served from it again.
import { idempotencyConfig, type IdempotencyConfig } from '../../src/config/config.tokens.js';
import { RedisKeys } from '@idempotent-orders/nest-idempotency/testing';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { findRedisServer, startRedisServer, type RedisServer } from '../../bench/redis-server.js';
import { findViolations } from '../support/invariants.js';
import { describeMode, redisMode } from '../support/store-modes.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const KEYS = 12;
const CLIENTS = 8;
/** Answers each phase waits for (before, during and after the outage): a count, not a time, so a busy machine cannot thin it out. */
const PER_PHASE = 30;

const shared = redisMode();
const found = findRedisServer();
// A server of its own to kill, never the run's shared one.
const mode = 'missing' in found ? { ...shared, skip: found.missing } : shared;

describeMode(mode, 'chaos: Redis killed under load', () => {
  let redis: RedisServer;
  let t: TestApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    t = await startApp({
      dbName: 'test_redis_chaos',
      env: {
        REDIS_URL: redis.url,
        REDIS_BREAKER_RESET_MS: '500',
        REDIS_BREAKER_VOLUME_THRESHOLD: '5',
        PAYMENT_SIMULATOR_LATENCY_MS: '10',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  const metrics = async () => (await t.http().get('/metrics').expect(200)).text;
  const series = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const post = (key: string) =>
    t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', `chaos-${key}`)
      .send(orderBody({ customerId: `cus_${key}` }));
  /** Every third request is a new key, sent by two clients at about the same time (a duplicate in flight); the rest replay. */
  const keyOf = (i: number) => (i % 3 === 0 ? `new-${Math.floor(i / 6)}` : `old-${i % KEYS}`);
  const until = async (done: () => boolean, capMs: number) => {
    const deadline = Date.now() + capMs;
    while (!done() && Date.now() < deadline) await sleep(50);
  };

  it('no 5xx, no second order or charge, balanced ledgers; the cache serves again once the circuit closes', async () => {
    const answers: { key: string; status: number; id?: string; ms: number; retryAfter?: string }[] = [];
    const seeded: typeof answers = [];
    for (let key = 0; key < KEYS; key++) {
      const res = await post(`old-${key}`).expect(201);
      seeded.push({ key: `old-${key}`, status: res.status, id: res.body.id, ms: 0 });
    }
    let running = true;
    const client = async (offset: number) => {
      for (let i = offset; running; i += CLIENTS) {
        const key = keyOf(i);
        const started = Date.now();
        const res = await post(key);
        answers.push({ key, status: res.status, id: res.body?.id, ms: Date.now() - started, retryAfter: res.headers['retry-after'] });
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, offset) => client(offset)));

    await until(() => answers.length >= PER_PHASE, 15_000);
    const beforeKill = answers.length;
    await redis.kill();
    await sleep(1000);
    await until(() => answers.length - beforeKill >= PER_PHASE, 15_000);
    // Until the breaker opens: the successes before the kill count in its 10 s window, so that can take seconds.
    let outage = await metrics();
    // ...and until a request met it open (under load the snapshot can come between the opening and the next look-up).
    const skipped = (text: string) => series(text, 'idempotency_cache_requests_total{call="early",result="skipped_open_circuit"}');
    for (
      const deadline = Date.now() + 20_000;
      (series(outage, 'idempotency_cache_circuit_state') !== 2 || skipped(outage) === 0) && Date.now() < deadline;
    ) {
      await sleep(200);
      outage = await metrics();
    }
    const duringOutage = answers.length - beforeKill;
    await redis.restart();
    const afterRestart = answers.length;
    await until(() => answers.length - afterRestart >= PER_PHASE, 15_000);
    running = false;
    await load;

    // Redis was down: calls failed, then the circuit opened and skipped it.
    expect(duringOutage).toBeGreaterThanOrEqual(PER_PHASE);
    expect(series(outage, 'idempotency_cache_requests_total{call="early",result="error"}')).toBeGreaterThan(0);
    expect(series(outage, 'idempotency_cache_requests_total{call="early",result="skipped_open_circuit"}')).toBeGreaterThan(0);
    // Only the contract's answers: the order, or "still in flight" with a hint.
    const unexpected = answers.filter((a) => a.status !== 201 && !(a.status === 409 && Number(a.retryAfter) >= 1));
    expect(unexpected).toEqual([]);
    // One order per key, whatever the path that answered.
    const idsByKey = new Map<string, Set<string>>();
    for (const a of [...seeded, ...answers].filter((answer) => answer.status === 201))
      idsByKey.set(a.key, (idsByKey.get(a.key) ?? new Set()).add(a.id!));
    for (const ids of idsByKey.values()) expect(ids.size).toBe(1);
    const acknowledged = [...idsByKey.values()].map((ids) => [...ids][0]);
    expect([...idsByKey.keys()].filter((key) => key.startsWith('new-')).length).toBeGreaterThan(2);
    expect(await t.db.collection('orders').countDocuments()).toBe(acknowledged.length);
    expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(acknowledged.length);
    expect(await findViolations({ ...t, acknowledgedOrderIds: acknowledged, requireSettled: true })).toEqual([]);

    // Back: the circuit closes, a replay warms the empty Redis, the next one is a hit.
    const deadline = Date.now() + 15_000;
    while (series(await metrics(), 'idempotency_cache_circuit_state') !== 0 && Date.now() < deadline) {
      await post('old-0');
      await sleep(200);
    }
    expect(series(await metrics(), 'idempotency_cache_circuit_state')).toBe(0);
    await post('old-1').expect(201);
    const hits = series(await metrics(), 'idempotency_cache_requests_total{call="early",result="hit"}');
    const replay = await post('old-1').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(series(await metrics(), 'idempotency_cache_requests_total{call="early",result="hit"}')).toBe(hits + 1);
    const keys = new RedisKeys('idem:test_redis_chaos', t.app.get<IdempotencyConfig>(idempotencyConfig.KEY).digestKey);
    expect(await t.redis!.exists(keys.entry('acme:orders-service:orders.create:key:chaos-old-1'))).toBe(1);
  }, 90_000);
});
