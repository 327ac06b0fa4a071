import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startApp, type TestApp } from '../../test/support/test-app.js';
import { TransactionRunner } from '../database/transaction.runner.js';
import { fingerprintRequest } from './fingerprint.js';
import { IdempotencyAttempts } from './idempotency-attempts.js';
import { IdempotencyKeyReusedError } from './idempotency.errors.js';
import { IdempotencyRecordRepository } from './idempotency-record.repository.js';
import { StoredResponses } from './stored-responses.js';
import { IdempotencyService, type IdempotentRequest, type IdempotentWork } from './idempotency.service.js';

/**
 * The module on its own, with a consumer that is not orders: what a team
 * lifting src/idempotency/ into another service gets.
 */
describe('IdempotencyService with a minimal consumer', () => {
  let t: TestApp;
  let service: IdempotencyService;
  let widgets: Collection<{ _id: string }>;
  let work: IdempotentWork;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_idempotency_module' });
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
          const response = { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: `wgt_${lease.claimId}` }) };
          await attempts.complete(session, lease, 'done', response);
          return response;
        }),
    };
  });
  beforeEach(async () => {
    await t.reset();
    await widgets.deleteMany({});
  });
  afterAll(async () => t.close());

  const request = (overrides: Partial<IdempotentRequest> = {}): IdempotentRequest => ({
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
    expect(record).toMatchObject({ _id: 'acme:orders-service:widgets.create:key:k-new', schemaVersion: 2 });
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

  it('a live record under an id of an earlier release (with v{N} in it) still owns its key', async () => {
    const legacyId = 'acme:orders-service:widgets.create:v1:k-1';
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

  it('an older version past its retention no longer owns the key', async () => {
    await service.execute(request({ schemaVersion: 1 }), work);
    await t.db.collection('idempotency_records').updateOne({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const after = await service.execute(request({ schemaVersion: 2 }), work);
    expect(after.replayed).toBe(false);
    expect(await widgets.countDocuments()).toBe(2);
  });
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}
