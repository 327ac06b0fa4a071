// The duplicate guard (issue 27 item 4) on the package alone: opt-in per route (@Idempotent({ duplicateGuard }))
// and per tenant (options.duplicateGuard.tenants), answered by the package's own problem filter.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { IdempotencyOptionsError, resolveOptions } from '../src/index.js';
import { FixtureModule, gate } from './fixture-app/fixture.module.js';
import { ADAPTERS, startModuleApp, TEST_OPTIONS, type ModuleApp } from './support/module-app.js';

describe.each(ADAPTERS)('the duplicate guard on the fixture app on %s', (adapter) => {
  let t: ModuleApp;
  const post = (path: '/widgets' | '/widgets/guarded', key: string, body: object, tenant = 'acme', headers: Record<string, string> = {}) =>
    t.http().post(path).set('x-tenant', tenant).set(headers).set('Idempotency-Key', key).send(body);
  const count = (name: string) => t.db.collection(name).countDocuments();

  beforeAll(async () => {
    t = await startModuleApp({
      adapter,
      dbName: `test_package_duplicate_guard_${adapter}`,
      imports: [FixtureModule],
      options: { inFlight: { waitMs: 0 }, duplicateGuard: { windowSeconds: 60, tenants: (tenant) => tenant !== 'globex' } },
    });
  });
  beforeEach(async () => {
    gate.hold = null;
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'idempotency_duplicate_guard', 'widgets']) {
      await t.db.collection(name).deleteMany({});
    }
  });
  afterAll(async () => t?.close());

  it('builds its collection with the TTL index at bootstrap (indexes: bootstrap)', async () => {
    const indexes = await t.db.collection('idempotency_duplicate_guard').indexes();
    expect(indexes).toContainEqual(expect.objectContaining({ name: 'duplicate_guard_ttl', key: { until: 1 }, expireAfterSeconds: 0 }));
  });

  it('refuses the same body under a second key on the opted-in route: 409 possible_duplicate + Location', async () => {
    const first = await post('/widgets/guarded', 'g-1', { size: 'M' }).expect(201);
    const second = await post('/widgets/guarded', 'g-2', { size: 'M' }).expect(409);
    expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(second.body).toMatchObject({ status: 409, code: 'possible_duplicate', location: first.headers.location });
    expect(second.headers.location).toBe(first.headers.location);
    expect(await count('widgets')).toBe(1);
    expect(await count('idempotency_records')).toBe(1);
    // The same key again is a replay, as ever.
    const replay = await post('/widgets/guarded', 'g-1', { size: 'M' }).expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('Idempotency-Intent: new is a second widget', async () => {
    await post('/widgets/guarded', 'i-1', { size: 'L' }).expect(201);
    await post('/widgets/guarded', 'i-2', { size: 'L' }, 'acme', { 'Idempotency-Intent': 'new' }).expect(201);
    expect(await count('widgets')).toBe(2);
  });

  it('leaves a route that did not opt in alone', async () => {
    await post('/widgets', 'w-1', { size: 'S' }).expect(201);
    await post('/widgets', 'w-2', { size: 'S' }).expect(201);
    // Idempotency-Intent means nothing there: not even validated.
    await post('/widgets', 'w-3', { size: 'S' }, 'acme', { 'Idempotency-Intent': 'whatever' }).expect(201);
    expect(await count('widgets')).toBe(3);
    expect(await count('idempotency_duplicate_guard')).toBe(0);
  });

  it('leaves a tenant the tenants option excludes alone', async () => {
    await post('/widgets/guarded', 'x-1', { size: 'M' }, 'globex').expect(201);
    await post('/widgets/guarded', 'x-2', { size: 'M' }, 'globex').expect(201);
    expect(await count('widgets')).toBe(2);
  });

  it('keeps tenants apart: the same body from another guarded tenant is its own', async () => {
    await post('/widgets/guarded', 't-1', { size: 'S' }, 'acme').expect(201);
    await post('/widgets/guarded', 't-1', { size: 'S' }, 'initech').expect(201);
    expect(await count('widgets')).toBe(2);
  });

  it('answers 409 with Retry-After and no Location while the first is in flight', async () => {
    let release!: () => void;
    gate.hold = new Promise<void>((resolve) => (release = resolve));
    const first = post('/widgets/guarded', 'f-1', { size: 'L' }).then((res) => res);
    for (let i = 0; i < 200 && (await count('idempotency_records')) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const second = await post('/widgets/guarded', 'f-2', { size: 'L' }).expect(409);
    expect(second.body.code).toBe('possible_duplicate');
    expect(second.headers['retry-after']).toBe('1');
    expect(second.headers.location).toBeUndefined();
    release();
    expect((await first).status).toBe(201);
    expect(await count('widgets')).toBe(1);
  });
});

describe('duplicateGuard options', () => {
  it('are refused at boot with the problem named', () => {
    expect(() => resolveOptions({ ...TEST_OPTIONS, duplicateGuard: { windowSeconds: 0 } })).toThrow(IdempotencyOptionsError);
    expect(() => resolveOptions({ ...TEST_OPTIONS, duplicateGuard: { windowSeconds: 0 } })).toThrow(/duplicateGuard\.windowSeconds/);
  });

  it('default to off, and to every tenant when on', () => {
    expect(resolveOptions(TEST_OPTIONS).duplicateGuard).toBeNull();
    expect(resolveOptions({ ...TEST_OPTIONS, duplicateGuard: { windowSeconds: 5 } }).duplicateGuard?.tenants('anyone')).toBe(true);
  });
});
