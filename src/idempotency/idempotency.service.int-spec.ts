import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startApp, type TestApp } from '../../test/support/test-app.js';
import { TransactionRunner } from '../database/transaction.runner.js';
import { fingerprintRequest } from './fingerprint.js';
import { IdempotencyAttempts } from './idempotency-attempts.js';
import { IdempotencyKeyReusedError } from './idempotency.errors.js';
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
    expect(record).toMatchObject({ _id: 'acme:orders-service:widgets.create:v2:k-new', schemaVersion: 2 });
  });

  it('an older version past its retention no longer owns the key', async () => {
    await service.execute(request({ schemaVersion: 1 }), work);
    await t.db.collection('idempotency_records').updateOne({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const after = await service.execute(request({ schemaVersion: 2 }), work);
    expect(after.replayed).toBe(false);
    expect(await widgets.countDocuments()).toBe(2);
  });
});
