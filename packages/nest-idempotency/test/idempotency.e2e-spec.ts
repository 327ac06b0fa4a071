// The package's HTTP contract on a consumer that is not orders (test/fixture-app), booted with the
// module alone: the guarantees a team gets from `npm install` and one forRoot, checked on the database.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { MongoClient } from 'mongodb';
import { IdempotencyAttempts, IdempotencyService, TransactionRunner, type IdempotentWork } from '../src/index.js';
import { FixtureModule, gate } from './fixture-app/fixture.module.js';
import { ADAPTERS, mongoUri, startModuleApp, type ModuleApp } from './support/module-app.js';

describe.each(ADAPTERS)('the package on a fixture app (widgets: closed, settings: open) on %s', (adapter) => {
  let t: ModuleApp;
  const post = (key: string | null, body: object, tenant = 'acme') => {
    const req = t.http().post('/widgets').set('x-tenant', tenant);
    return (key === null ? req : req.set('Idempotency-Key', key)).send(body);
  };
  const records = () => t.db.collection('idempotency_records');
  const widgets = () => t.db.collection('widgets');

  beforeAll(async () => {
    t = await startModuleApp({
      adapter,
      dbName: `test_package_fixture_${adapter}`,
      imports: [FixtureModule],
      options: { inFlight: { waitMs: 200 } },
    });
  });
  beforeEach(async () => {
    gate.hold = null;
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'idempotency_subjects', 'widgets', 'settings', 'shipments']) {
      await t.db.collection(name).deleteMany({});
    }
  });
  afterAll(async () => t?.close());

  it('refuses a keyed route without a key: 400 problem+json, nothing written', async () => {
    const res = await post(null, { size: 'M' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 400, code: 'idempotency_key_missing' });
    expect(await records().countDocuments()).toBe(0);
    expect(await widgets().countDocuments()).toBe(0);
  });

  it('creates once and replays the original status, headers and bytes', async () => {
    const first = await post('w-1', { size: 'M' });
    const again = await post('w-1', { size: 'M' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await widgets().countDocuments()).toBe(1);
    expect(await records().findOne({})).toMatchObject({
      _id: 'acme:widgets-service:widgets.create:key:w-1',
      status: 'complete',
      recoveryPoint: 'created',
    });
  });

  it('answers the same key with another body 422, and changes nothing', async () => {
    await post('w-2', { size: 'M' }).expect(201);
    const other = await post('w-2', { size: 'L' });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await widgets().find({}).toArray()).toMatchObject([{ size: 'M' }]);
  });

  it('scopes keys per tenant: the same key and body of another tenant is its own request', async () => {
    await post('w-3', { size: 'S' }, 'acme').expect(201);
    const globex = await post('w-3', { size: 'S' }, 'globex');
    expect(globex.status).toBe(201);
    expect(globex.headers['idempotent-replayed']).toBeUndefined();
    expect(await widgets().countDocuments()).toBe(2);
  });

  it('answers a duplicate of a request in flight 409 with Retry-After, then replays it once it is done', async () => {
    let release!: () => void;
    gate.hold = new Promise<void>((done) => (release = done));
    const first = post('w-4', { size: 'L' }).then((res) => res);
    await waitFor(async () => (await records().countDocuments({ status: 'pending' })) === 1);
    const duplicate = await post('w-4', { size: 'L' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ code: 'idempotency_key_in_use' });
    expect(Number(duplicate.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    release();
    expect((await first).status).toBe(201);
    expect((await post('w-4', { size: 'L' })).headers['idempotent-replayed']).toBe('true');
    expect(await widgets().countDocuments()).toBe(1);
  });

  it('ten concurrent copies of one request: one widget, one record, every answer the same widget or 409', async () => {
    gate.hold = new Promise<void>((done) => setTimeout(done, 50));
    const answers = await Promise.all(Array.from({ length: 10 }, () => post('w-5', { size: 'S' })));
    const created = answers.filter((res) => res.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((res) => res.text)).size).toBe(1);
    expect(answers.every((res) => res.status === 201 || res.status === 409)).toBe(true);
    expect(await widgets().countDocuments()).toBe(1);
    expect(await records().countDocuments()).toBe(1);
  });

  it('validates after the key: a bad body is 400 and leaves the key unused; the good body under it 201, then replayed (issue 48)', async () => {
    const bad = await post('w-6', { size: 'XXL' });
    expect(bad.status).toBe(400);
    expect(await records().countDocuments()).toBe(0);
    const good = await post('w-6', { size: 'S' });
    expect(good.status).toBe(201);
    const again = await post('w-6', { size: 'S' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(good.text);
    expect(await widgets().countDocuments()).toBe(1);
    expect(await records().findOne({ clientKey: 'w-6' })).toMatchObject({ status: 'complete', attempt: 1, response: { status: 201 } });
  });

  it('a PUT declared open replays like any keyed route while the store is up', async () => {
    const put = () => t.http().put('/settings/theme').set('x-tenant', 'acme').set('Idempotency-Key', 's-1').send({ value: 'dark' });
    const first = await put();
    const again = await put();
    expect(first.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await t.db.collection('settings').findOne({})).toMatchObject({ _id: 'acme:theme', value: 'dark' });
  });

  it('the same protocol without HTTP: a message consumer passes its own key', async () => {
    const service = t.app.get(IdempotencyService);
    const attempts = t.app.get(IdempotencyAttempts);
    const transactions = t.app.get(TransactionRunner);
    // A queue consumer: the message id is the key, the message its body; no request, no interceptor.
    const key = { clientKey: 'msg-42', operation: 'widgets.create', schemaVersion: 1, method: 'MESSAGE', route: 'widgets.created' };
    // Completed runs of the work, counted after its transaction commits: the transaction's body itself may run again
    // when a write conflict aborts it (the conflict pass injects them), which is the runner's retry, not a second run.
    let runs = 0;
    const work: IdempotentWork = {
      begin: async () => undefined,
      resume: async (lease) => {
        const response = await transactions.run(async (session) => {
          const answer = { status: 200, headers: {}, body: 'done' };
          await attempts.complete(session, lease, 'done', answer);
          return answer;
        });
        runs++;
        return response;
      },
    };
    const first = await service.execute(service.requestFor(key, 'acme', { id: 42 }), work);
    const second = await service.execute(service.requestFor(key, 'acme', { id: 42 }), work);
    expect(first.replayed).toBe(false);
    expect(second).toMatchObject({ replayed: true, response: { status: 200, body: 'done' } });
    expect(runs).toBe(1);
    await expect(service.execute(service.requestFor(key, 'acme', { id: 43 }), work)).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
  });

  it('binds a key to the resource: the same key and body on another widget is 422 and ships nothing (issue 34)', async () => {
    const ship = (widget: string) =>
      t.http().post(`/widgets/${widget}/ship`).set('x-tenant', 'acme').set('Idempotency-Key', 'ship-1').send({ carrier: 'ups' });
    const first = await ship('wgt_A');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ widget: 'wgt_A' });
    const other = await ship('wgt_B');
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused' });
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    const again = await ship('wgt_A');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await t.db.collection('shipments').find({}).toArray()).map((doc) => doc.widget)).toEqual(['wgt_A']);
    expect(await records().findOne({})).toMatchObject({ fingerprint: { algorithm: 'sha256-jcs-v3' } });
  });

  it("takes a tenant id with ':' (a URN): its own record, not a 500 (SEC4-10)", async () => {
    const first = await post('urn-1', { size: 'S' }, 'org:42');
    expect(first.status).toBe(201);
    const replay = await post('urn-1', { size: 'S' }, 'org:42');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    // The same key of tenant "org" and of a tenant spelled like the encoded segment are other requests.
    expect((await post('urn-1', { size: 'S' }, 'org')).headers['idempotent-replayed']).toBeUndefined();
    expect((await post('urn-1', { size: 'S' }, 'org%3A42')).headers['idempotent-replayed']).toBeUndefined();
    expect(await widgets().countDocuments()).toBe(3);
    expect(await records().countDocuments({ tenant: 'org:42' })).toBe(1);
  });

  it('answers 503 with Retry-After when MongoDB is unreachable, and runs nothing', async () => {
    const connection = t.app.get<Connection>(getConnectionToken());
    await connection.close();
    try {
      const res = await post('w-7', { size: 'M' });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'store_unavailable' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      // The app's connection stays closed (this is the file's last test); the check reads through its own client.
      const client = await MongoClient.connect(mongoUri());
      try {
        expect(await client.db(`test_package_fixture_${adapter}`).collection('widgets').countDocuments({})).toBe(0);
        expect(await client.db(`test_package_fixture_${adapter}`).collection('idempotency_records').countDocuments({})).toBe(0);
      } finally {
        await client.close();
      }
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
