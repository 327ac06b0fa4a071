// Issue 27 items 1, 2 and 5: every error says what the client may do next
// (retryable, reuseKey, newKeySafe, Retry-After), a replay says when the
// original ran (Idempotent-Original-Date), the key view names what the key
// created (Location), and outbox events carry their aggregate and a schema
// version.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { OpenAPIV3 } from 'openapi-types';
import * as idempotency from '@idempotent-orders/nest-idempotency';
import { guidanceFor, IDEMPOTENCY_PROBLEM_GUIDANCE, IdempotencyError, problemGuidance } from '@idempotent-orders/nest-idempotency';
import { APP_PROBLEMS } from '../../src/common/error-status.js';
import { FASTIFY_ERRORS, HTTP_EXCEPTION_CODES } from '../../src/common/problem-details.filter.js';
import { CLIENT_ERRORS, ROUTER_REFUSALS } from '../../src/http/framework-errors.js';
import { LogEventPublisher, EventPublisher, type PublishedEvent } from '../../src/outbox/event-publisher.port.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { ORDER_COMPLETED_SCHEMA_VERSION } from '../../src/orders/order-workflow.js';
import { responseCheck } from '../support/openapi-check.js';
import { describeMode, redisMode } from '../support/store-modes.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const GUIDANCE_FIELDS = ['retryable', 'reuseKey', 'newKeySafe'] as const;

/** Every code the app's tables and the package's errors name, with the status each is sent with. */
function codesOfTheTables(): Map<string, number> {
  const codes = new Map<string, number>();
  for (const [code, { status }] of Object.entries(APP_PROBLEMS)) codes.set(code, status);
  for (const [status, code] of Object.values(FASTIFY_ERRORS)) codes.set(code, status);
  for (const [status, code] of Object.entries(HTTP_EXCEPTION_CODES)) codes.set(code, Number(status));
  for (const [status, code] of Object.values(CLIENT_ERRORS)) codes.set(code, status);
  for (const [status, code] of Object.values(ROUTER_REFUSALS)) codes.set(code, status);
  // Every exported error class of the package that answers a client (constructors take at most a Retry-After).
  for (const exported of Object.values(idempotency)) {
    if (typeof exported !== 'function' || !(exported.prototype instanceof IdempotencyError)) continue;
    const error = new (exported as unknown as new (seconds: number) => IdempotencyError)(1);
    codes.set(error.code, error.status);
  }
  return codes;
}

/** Every snake_case code a source file writes as a DomainError/IdempotencyError code or into problem(): none may lack guidance. */
function codesInTheSources(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.spec.ts') && !path.endsWith('-spec.ts')) {
        const text = readFileSync(path, 'utf8');
        for (const match of text.matchAll(/readonly code = '([a-z_]+)'/g)) found.add(match[1]);
        for (const match of text.matchAll(/problem\(\s*\d{3},\s*'([a-z_]+)'/g)) found.add(match[1]);
      }
    }
  };
  walk(join(process.cwd(), 'src'));
  walk(join(process.cwd(), 'packages/nest-idempotency/src'));
  return found;
}

describe('the guidance table', () => {
  // The table as the booted app has it: the app registers its codes where it sets up the package, at boot.
  let booted: TestApp;
  beforeAll(async () => {
    booted = await startApp({ dbName: 'test_client_guidance_table' });
  });
  afterAll(async () => booted.close());

  it('is filled where the app sets up the package, never as the side effect of importing a module', () => {
    const sideEffectImports: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) {
          for (const match of readFileSync(path, 'utf8').matchAll(/^import '(\.[^']+)';$/gm))
            sideEffectImports.push(`${path}: ${match[1]}`);
        }
      }
    };
    walk(join(process.cwd(), 'src'));
    // The one import kept for its effect: main.ts refuses an old Node before any other module is evaluated.
    const nodeCheck = `${join(process.cwd(), 'src', 'main.ts')}: ./node-version.js`;
    expect(sideEffectImports.filter((found) => found !== nodeCheck)).toEqual([]);
  });

  it('gives every code of the tables and of the sources its three fields, consistently', () => {
    const codes = codesOfTheTables();
    const inSources = codesInTheSources();
    // The scan sees the stored answers' codes too (written with problem() where they are built).
    expect([...inSources]).toEqual(expect.arrayContaining(['card_declined', 'idempotency_key_expired', 'response_erased', 'rate_limited']));
    for (const code of inSources) if (!codes.has(code)) codes.set(code, 0);
    expect(codes.size).toBeGreaterThan(30);
    const missing = [...codes.keys()].filter((code) => guidanceFor(code) === undefined);
    expect(missing).toEqual([]);
    for (const [code] of codes) {
      const guidance = guidanceFor(code)!;
      for (const field of GUIDANCE_FIELDS) expect([code, field, typeof guidance[field]]).toEqual([code, field, 'boolean']);
      // A new key is safe only when nothing ran: then a retry need not carry the key.
      if (guidance.newKeySafe) expect([code, 'reuseKey', guidance.reuseKey]).toEqual([code, 'reuseKey', false]);
      // Retry-After wherever a retry is meant.
      if (guidance.retryable) expect([code, guidance.retryAfterSeconds! > 0]).toEqual([code, true]);
    }
  });

  it('says what the contract says for the codes clients act on', () => {
    const table = (code: string) => {
      const { retryable, reuseKey, newKeySafe } = guidanceFor(code)!;
      return { retryable, reuseKey, newKeySafe };
    };
    expect(table('validation_failed')).toEqual({ retryable: false, reuseKey: false, newKeySafe: true });
    expect(table('idempotency_key_reused')).toEqual({ retryable: false, reuseKey: false, newKeySafe: true });
    expect(table('idempotency_key_missing')).toEqual({ retryable: false, reuseKey: false, newKeySafe: true });
    expect(table('idempotency_key_in_use')).toEqual({ retryable: true, reuseKey: true, newKeySafe: false });
    expect(table('idempotency_key_expired')).toEqual({ retryable: false, reuseKey: false, newKeySafe: false });
    expect(table('card_declined')).toEqual({ retryable: false, reuseKey: false, newKeySafe: false });
    expect(table('payment_provider_unavailable')).toEqual({ retryable: true, reuseKey: true, newKeySafe: false });
    expect(table('internal_error')).toEqual({ retryable: true, reuseKey: true, newKeySafe: false });
    expect(table('rate_limited')).toMatchObject({ retryable: true, reuseKey: true });
    expect(IDEMPOTENCY_PROBLEM_GUIDANCE.store_unavailable).toMatchObject({ retryable: true, reuseKey: true, newKeySafe: false });
    // A code no table names (a Nest HttpException of another status) gets the cautious reading of its status.
    expect(problemGuidance(406, 'http_406')).toMatchObject({ retryable: false, newKeySafe: false });
    expect(problemGuidance(502, 'http_502')).toMatchObject({ retryable: true, reuseKey: true, newKeySafe: false });
  });
});

describe('client guidance on the wire', () => {
  let t: TestApp;
  let documented: Awaited<ReturnType<typeof responseCheck>>;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_client_guidance', override: (b) => b.overrideProvider(EventPublisher).useClass(LogEventPublisher) });
    documented = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (key: string | null, body: object = orderBody()) => {
    const req = t.http().post('/v1/orders').set(auth());
    return (key === null ? req : req.set('Idempotency-Key', key)).send(body);
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const guidanceOf = (body: Record<string, unknown>) => ({
    retryable: body.retryable,
    reuseKey: body.reuseKey,
    newKeySafe: body.newKeySafe,
  });
  const records = () => t.db.collection<{ _id: string; finishedAt?: Date; updatedAt: Date }>('idempotency_records');

  it('every problem the client meets carries the three fields, and Retry-After where a retry is meant', async () => {
    const cases = [
      { res: await post(null), code: 'idempotency_key_missing' },
      { res: await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-v').send({ nope: true }), code: 'validation_failed' },
      { res: await t.http().post('/v1/orders').set('Idempotency-Key', 'k-anon').send(orderBody()), code: 'unauthorized' },
      { res: await t.http().get('/v1/nothing-here').set(auth()), code: 'not_found' },
      { res: await t.http().get('/v1/orders/ord_missing').set(auth()), code: 'order_not_found' },
      { res: await post('k-down', orderBody({ paymentMethod: { token: 'tok_provider_down' } })), code: 'payment_provider_unavailable' },
    ];
    for (const { res, code } of cases) {
      expect([code, res.headers['content-type']]).toEqual([code, expect.stringMatching(/^application\/problem\+json/)]);
      expect(res.body.code).toBe(code);
      const expected = guidanceFor(code)!;
      expect([code, guidanceOf(res.body)]).toEqual([
        code,
        { retryable: expected.retryable, reuseKey: expected.reuseKey, newKeySafe: expected.newKeySafe },
      ]);
      if (expected.retryable) expect([code, Number(res.headers['retry-after']) > 0]).toEqual([code, true]);
    }
  });

  it('a 422 for another body says a new key is safe; the stored 402 carries its guidance on the first answer and the replay', async () => {
    await post('k-other').expect(201);
    const other = await post('k-other', orderBody({ customerId: 'cus_other' })).expect(422);
    expect(guidanceOf(other.body)).toEqual({ retryable: false, reuseKey: false, newKeySafe: true });
    expect(documented.errors('POST', '/v1/orders', 422, 'application/problem+json', other.body)).toEqual([]);

    const declined = orderBody({ paymentMethod: { token: 'tok_decline' } });
    const first = await post('k-declined', declined).expect(402);
    expect(guidanceOf(first.body)).toEqual({ retryable: false, reuseKey: false, newKeySafe: false });
    const replay = await post('k-declined', declined).expect(402);
    expect(replay.text).toBe(first.text);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('a late retry (409 idempotency_key_expired) is not retryable and no new key is safe: Location names what was done', async () => {
    const first = await post('k-late').expect(201);
    // Past retention without waiting for it: the tombstone answers the same body.
    await records().updateOne({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const late = await post('k-late').expect(409);
    expect(late.body.code).toBe('idempotency_key_expired');
    expect(guidanceOf(late.body)).toEqual({ retryable: false, reuseKey: false, newKeySafe: false });
    expect(late.headers.location).toBe(first.headers.location);
    expect(late.headers['idempotent-original-date']).toBeUndefined();
  });

  it('a replay carries Idempotent-Original-Date, the time the original was stored; the first answer never does', async () => {
    const first = await post('k-date').expect(201);
    expect(first.headers['idempotent-original-date']).toBeUndefined();
    const record = await records().findOne({});
    expect(record!.finishedAt).toBeInstanceOf(Date);
    // The header has one-second resolution: wait past the second so "now" cannot pass for the original.
    await sleep(1100);
    const replay = await post('k-date').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const original = replay.headers['idempotent-original-date'];
    expect(original).toBe(record!.finishedAt!.toUTCString());
    expect(Math.abs(Date.parse(original) - Date.parse(first.headers.date))).toBeLessThanOrEqual(1000);
    expect(Date.parse(replay.headers.date) - Date.parse(original)).toBeGreaterThanOrEqual(1000);
    expect(documented.errors('POST', '/v1/orders', 201, 'application/json', replay.body)).toEqual([]);

    // A stored 402 too.
    const declined = orderBody({ paymentMethod: { token: 'tok_decline' } });
    const refused = await post('k-date-402', declined).expect(402);
    expect(refused.headers['idempotent-original-date']).toBeUndefined();
    const again = await post('k-date-402', declined).expect(402);
    expect(Math.abs(Date.parse(again.headers['idempotent-original-date']) - Date.parse(refused.headers.date))).toBeLessThanOrEqual(1000);
  });

  it('a record finished before finishedAt existed sends its updatedAt', async () => {
    await post('k-old').expect(201);
    const updatedAt = new Date('2026-11-30T08:15:00Z');
    await records().updateOne({}, { $unset: { finishedAt: '' }, $set: { updatedAt } });
    const replay = await post('k-old').expect(201);
    expect(replay.headers['idempotent-original-date']).toBe(updatedAt.toUTCString());
  });

  it('the key view names what the key created, in a Location header and a location field', async () => {
    const first = await post('k-view').expect(201);
    const view = await t.http().get('/v1/idempotency-keys/k-view').set(auth()).expect(200);
    expect(view.headers.location).toBe(first.headers.location);
    expect(view.body.location).toBe(`/v1/orders/${first.body.id}`);
    expect(view.body.records[0]).toMatchObject({ status: 'complete', responseStatus: 201, location: `/v1/orders/${first.body.id}` });
    expect(documented.errors('GET', '/v1/idempotency-keys/{key}', 200, 'application/json', view.body)).toEqual([]);

    // A stored 402 created no resource it points at: no header, location null.
    await post('k-view-402', orderBody({ paymentMethod: { token: 'tok_decline' } })).expect(402);
    const declined = await t.http().get('/v1/idempotency-keys/k-view-402').set(auth()).expect(200);
    expect(declined.headers.location).toBeUndefined();
    expect(declined.body).toMatchObject({ location: null, records: [{ responseStatus: 402, location: null }] });
  });

  it('an outbox event carries its aggregate id and schema version, in the database and as published', async () => {
    const first = await post('k-event').expect(201);
    const event = await t.db.collection('outbox_events').findOne({});
    expect(event).toMatchObject({
      _id: `evt_${first.body.id}_completed`,
      type: 'order.completed',
      aggregateId: first.body.id,
      schemaVersion: 2,
    });
    // Version 2: the order view gained capture and the authorized, captured and refunded amounts.
    expect(ORDER_COMPLETED_SCHEMA_VERSION).toBe(2);

    const publisher = t.app.get(EventPublisher) as LogEventPublisher;
    const received: PublishedEvent[] = [];
    const listener = (published: PublishedEvent) => received.push(published);
    publisher.emitter.on('order.completed', listener);
    try {
      await t.app.get(OutboxRelay).tick();
    } finally {
      publisher.emitter.off('order.completed', listener);
    }
    expect(received).toEqual([
      expect.objectContaining({ id: `evt_${first.body.id}_completed`, aggregateId: first.body.id, schemaVersion: 2 }),
    ]);

    // An event an earlier release wrote (neither field) is published as version 1 of its payload's id.
    await t.db
      .collection('outbox_events')
      .updateOne(
        {},
        { $unset: { aggregateId: '', schemaVersion: '' }, $set: { status: 'pending', publishedAt: null, availableAt: new Date(0) } },
      );
    publisher.emitter.on('order.completed', listener);
    try {
      await t.app.get(OutboxRelay).tick();
    } finally {
      publisher.emitter.off('order.completed', listener);
    }
    expect(received[1]).toMatchObject({ aggregateId: first.body.id, schemaVersion: 1 });
  });
});

const redis = redisMode();

describeMode(redis, 'Idempotent-Original-Date from the Redis fast path', () => {
  let t: TestApp;

  beforeAll(async () => {
    // Room for Redis on a loaded machine: a command past the default 25 ms timeout falls back to MongoDB,
    // which is the fast path working as designed, but not what this test counts.
    t = await startApp({ dbName: 'test_client_guidance_redis', env: { ...redis.env, REDIS_COMMAND_TIMEOUT_MS: '1000' } });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (key: string) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody());
  const lookups = async () =>
    Number(
      /idempotency_store_duration_seconds_count\{operation="lookup"\} (\d+)/.exec((await t.http().get('/metrics').expect(200)).text)?.[1] ??
        0,
    );

  it('a replay answered by Redis carries the original time too', async () => {
    const first = await post('k-fast').expect(201);
    expect(first.headers['idempotent-original-date']).toBeUndefined();
    const finishedAt = (await t.db.collection<{ finishedAt: Date }>('idempotency_records').findOne({}))!.finishedAt;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = await lookups();
    const replay = await post('k-fast').expect(201);
    expect(await lookups()).toBe(before); // answered by Redis: no MongoDB look-up
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['idempotent-original-date']).toBe(finishedAt.toUTCString());
  });
});
