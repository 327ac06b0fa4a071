import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startModuleApp, type ModuleApp } from '../../test/support/module-app.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { fingerprintRequest } from './fingerprint.js';
import { IdempotencyAttempts } from './attempts.js';
import { IdempotencyKeyReusedError } from '../errors.js';
import type { IdempotencyRecord } from './record.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import { StoredResponses } from './stored-responses.js';
import { IdempotencyService, type IdempotentRequest, type IdempotentWork } from './idempotency.service.js';

/**
 * The module on its own (no app of this repository), with a consumer that
 * is not orders: what a team installing the package gets.
 */
describe('IdempotencyService with a minimal consumer', () => {
  let t: ModuleApp;
  let service: IdempotencyService;
  let widgets: Collection<{ _id: string }>;
  let work: IdempotentWork;

  beforeAll(async () => {
    t = await startModuleApp({ dbName: 'test_idempotency_module' });
    service = t.app.get(IdempotencyService);
    const attempts = t.app.get(IdempotencyAttempts);
    const transactions = t.app.get(TransactionRunner);
    widgets = t.db.collection('widgets');
    work = {
      begin: async (session, lease) => {
        await widgets.insertOne({ _id: `wgt_${lease.claimId}` }, { session });
      },
      resume: (lease) =>
        transactions.run(async (session) => {
          const response = {
            status: 201,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ id: `wgt_${lease.claimId}` }),
          };
          await attempts.complete(session, lease, 'done', response);
          return response;
        }),
    };
  });
  beforeEach(async () => {
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'idempotency_subjects', 'widgets'])
      await t.db.collection(name).deleteMany({});
  });
  afterAll(async () => t.close());

  const request = (overrides: Partial<IdempotentRequest> = {}): IdempotentRequest => ({
    receivedAt: new Date(),
    tenant: 'acme',
    operation: 'widgets.create',
    clientKey: 'k-1',
    schemaVersion: 1,
    ttlSeconds: 60,
    fingerprint: fingerprintRequest('POST', '/v1/widgets', { size: 'L' }),
    ...overrides,
  });

  it('executes once and replays the stored response', async () => {
    const first = await service.execute(request(), work);
    const again = await service.execute(request(), work);
    expect(first.replayed).toBe(false);
    expect(again).toMatchObject({ replayed: true, response: first.response });
    expect(await widgets.countDocuments()).toBe(1);
  });

  it("never answers with another tenant's record that has this key's id (0.1 kept tenants raw: `a%3Ab`'s id is `a:b`'s now)", async () => {
    // As the interceptor builds them: the early look-up and execute() see the same fingerprint.
    const key = { clientKey: 'k-1', operation: 'widgets.create', schemaVersion: 1, method: 'POST', route: '/v1/widgets' };
    const body = { size: 'L' };
    expect((await service.execute(service.requestFor(key, 'a:b', body), work)).replayed).toBe(false);
    // The record as 0.1 would have written it for the tenant spelled `a%3Ab`: the same _id, another tenant.
    const records = t.db.collection<IdempotencyRecord>('idempotency_records');
    expect((await records.updateOne({ tenant: 'a:b' }, { $set: { tenant: 'a%3Ab' } })).modifiedCount).toBe(1);
    await expect(service.lookUpEarly(key, 'a:b', body)).rejects.toThrow(IdempotencyKeyReusedError);
    await expect(service.execute(service.requestFor(key, 'a:b', body), work)).rejects.toThrow(IdempotencyKeyReusedError);
    expect(await widgets.countDocuments()).toBe(1);
    expect(await records.countDocuments()).toBe(1);
  });

  it('after a response schema version bump, a retry of a key used before the bump is not executed again', async () => {
    const before = await service.execute(request({ schemaVersion: 1 }), work);
    const after = await service.execute(request({ schemaVersion: 2 }), work);
    expect(after.replayed).toBe(true);
    expect(after.response.body).toBe(before.response.body);
    expect(await widgets.countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(1);
    await expect(
      service.execute(request({ schemaVersion: 2, fingerprint: fingerprintRequest('POST', '/v1/widgets', { size: 'S' }) }), work),
    ).rejects.toThrow(IdempotencyKeyReusedError);
  });

  it('a new key after the bump is stored under the new version', async () => {
    await service.execute(request({ schemaVersion: 2, clientKey: 'k-new' }), work);
    const record = await t.db.collection('idempotency_records').findOne({});
    expect(record).toMatchObject({ _id: 'acme:widgets-service:widgets.create:key:k-new', schemaVersion: 2 });
    expect(record!.response.schemaVersion).toBe(2);
  });

  it('two instances on two schema versions claiming one key at the same moment: one record, executed once', async () => {
    // Both look-ups miss before either claim commits (the review reproduced it with a delay before the
    // claim insert): version 1's claim transaction is held open until version 2 is about to insert, and
    // version 2's insert waits until version 1 has finished.
    const repository = t.app.get(IdempotencyRecordRepository);
    const insert = repository.insertPending.bind(repository);
    const v2AtInsert = deferred();
    const v1Done = deferred();
    const spy = jest.spyOn(repository, 'insertPending').mockImplementation(async (session, record, lease) => {
      if (record.schemaVersion === 2) {
        v2AtInsert.resolve();
        await v1Done.promise;
      }
      return insert(session, record, lease);
    });
    const held: IdempotentWork = {
      begin: async (session, lease) => {
        if (lease.schemaVersion === 1) await v2AtInsert.promise;
        await work.begin(session, lease);
      },
      resume: (lease) => work.resume(lease),
    };
    try {
      const v1 = service.execute(request({ schemaVersion: 1 }), held).finally(() => v1Done.resolve());
      const v2 = service.execute(request({ schemaVersion: 2 }), held);
      const [first, second] = await Promise.all([v1, v2]);
      expect(first.replayed).toBe(false);
      expect(second).toMatchObject({ replayed: true, response: first.response });
    } finally {
      spy.mockRestore();
    }
    expect(await t.db.collection('idempotency_records').countDocuments({ tenant: 'acme', clientKey: 'k-1' })).toBe(1);
    expect(await widgets.countDocuments()).toBe(1);
  });

  it('one key sent to two schema versions at once, ten times: always one record and one execution', async () => {
    // Raced for real over the store (on the emulator: through the serializing proxy).
    for (let round = 0; round < 10; round++) {
      const clientKey = `k-race-${round}`;
      const results = await Promise.allSettled([
        service.execute(request({ schemaVersion: 1, clientKey }), work),
        service.execute(request({ schemaVersion: 2, clientKey }), work),
      ]);
      for (const result of results) {
        // The loser replays the winner, or is told the key is in flight.
        if (result.status === 'rejected') expect(result.reason).toMatchObject({ code: 'idempotency_key_in_use' });
      }
      expect(await t.db.collection('idempotency_records').countDocuments({ clientKey })).toBe(1);
    }
    expect(await widgets.countDocuments()).toBe(10);
  });

  it('a live record under an id of an earlier release (with v{N} in it) still owns its key', async () => {
    const legacyId = 'acme:widgets-service:widgets.create:v1:k-1';
    const response = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"wgt_legacy"}' };
    const now = new Date();
    await t.db.collection<{ _id: string } & Record<string, unknown>>('idempotency_records').insertOne({
      _id: legacyId,
      tenant: 'acme',
      operation: 'widgets.create',
      clientKey: 'k-1',
      status: 'complete',
      fingerprint: request().fingerprint,
      schemaVersion: 1,
      ttlSeconds: 60,
      attempt: 1,
      lease: null,
      recoveryPoint: 'done',
      subject: null,
      // Sealed under its own (legacy) id, as the earlier release did.
      response: t.app.get(StoredResponses).seal(legacyId, 1, response),
      createdAt: now,
      updatedAt: now,
      expiresAt: new Date(now.getTime() + 60_000),
      purgeAt: new Date(now.getTime() + 60_000),
    });
    const retry = await service.execute(request({ schemaVersion: 2 }), work);
    expect(retry).toMatchObject({ replayed: true, response });
    expect(await widgets.countDocuments()).toBe(0);
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(1);
  });

  it('a restart decided on an old incarnation of the record never revives the newer one', async () => {
    // The record expired and was replaced (attempt back to 1), and that new attempt was abandoned too,
    // while a slow request still holds what it read before: the same id, status and attempt, an older createdAt.
    const now = Date.now();
    const current = abandonedRecord(new Date(now - 1_000));
    const stale = { ...current, createdAt: new Date(now - 120_000) };
    await t.db.collection<{ _id: string } & Record<string, unknown>>('idempotency_records').insertOne(current);
    const repository = t.app.get(IdempotencyRecordRepository);
    const lookUp = jest.spyOn(repository, 'findById').mockResolvedValueOnce(stale as unknown as IdempotencyRecord);
    let crash = true;
    const checked: IdempotentWork = {
      begin: work.begin,
      resume: async (lease) => {
        // A consumer finds its business document by the claim id (orders: the order id).
        if (crash) {
          crash = false;
          throw new Error('worker died after the claim');
        }
        if (!(await widgets.findOne({ _id: `wgt_${lease.claimId}` }))) throw new Error(`No widget for claim ${lease.claimId}`);
        return work.resume(lease);
      },
    };
    try {
      await expect(service.execute(request(), checked)).rejects.toThrow('worker died');
    } finally {
      lookUp.mockRestore();
    }
    // The next retry takes the released lease over and must find what the restart created.
    const retry = await service.execute(request(), checked);
    expect(retry.replayed).toBe(false);
    expect(await widgets.countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({
      status: 'complete',
      attempt: 2,
      createdAt: current.createdAt,
    });
  });

  it('an older version past its retention no longer owns the key', async () => {
    await service.execute(request({ schemaVersion: 1 }), work);
    await t.db.collection('idempotency_records').updateOne({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    // Another body: the same one would meet the first request's tombstone (409 idempotency_key_expired) instead.
    const after = await service.execute(
      request({ schemaVersion: 2, fingerprint: fingerprintRequest('POST', '/v1/widgets', { size: 'XL' }) }),
      work,
    );
    expect(after.replayed).toBe(false);
    expect(after.response.status).not.toBe(409);
    expect(await widgets.countDocuments()).toBe(2);
  });
});

function abandonedRecord(createdAt: Date) {
  return {
    _id: 'acme:widgets-service:widgets.create:key:k-1',
    tenant: 'acme',
    operation: 'widgets.create',
    clientKey: 'k-1',
    status: 'failed',
    fingerprint: fingerprintRequest('POST', '/v1/widgets', { size: 'L' }),
    schemaVersion: 1,
    ttlSeconds: 60,
    attempt: 1,
    lease: null,
    recoveryPoint: 'abandoned',
    subject: null,
    response: null,
    createdAt,
    updatedAt: createdAt,
    expiresAt: new Date(Date.now() + 60_000),
    purgeAt: new Date(Date.now() + 60_000),
  };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}
