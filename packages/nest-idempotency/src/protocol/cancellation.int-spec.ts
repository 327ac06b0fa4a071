import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { Collection } from 'mongodb';
import { startModuleApp, type ModuleApp } from '../../test/support/module-app.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { fingerprintRequest } from './fingerprint.js';
import { IdempotencyAttempts } from './attempts.js';
import { IdempotencyKeyCanceledError, IdempotencyKeyReusedError, LeaseLostError } from '../errors.js';
import type { IdempotencyRecord, Lease } from './record.js';
import { IdempotencyReaper } from '../recovery/reaper.js';
import { IdempotencyService, type IdempotentRequest, type IdempotentWork } from './idempotency.service.js';
import { IdempotencyCancellation, type CancelSituation, type Canceler } from './cancellation.js';

/**
 * Cancel by key on the module alone, with a consumer that is not orders
 * (widgets): the record states it goes through, what the canceler is called
 * with, and that a repeat does nothing again.
 */
describe('IdempotencyCancellation with a minimal consumer', () => {
  let t: ModuleApp;
  let service: IdempotencyService;
  let cancellation: IdempotencyCancellation;
  let attempts: IdempotencyAttempts;
  let transactions: TransactionRunner;
  let records: Collection<IdempotencyRecord>;
  const settled: CancelSituation[] = [];
  const stopped: Lease[] = [];
  let held: { lease: Lease | null; go: () => void } = { lease: null, go: () => undefined };

  const finishWith = (lease: Lease, status: number) =>
    transactions.run(async (session) => {
      const response = {
        status,
        headers: { 'content-type': 'application/json', location: `/v1/widgets/wgt_${lease.claimId}` },
        body: '{}',
      };
      await attempts.complete(session, lease, 'done', response);
      return response;
    });
  const work: IdempotentWork = {
    begin: async () => undefined,
    resume: (lease) => finishWith(lease, 201),
  };
  const canceler: Canceler = {
    stop: async (lease) => {
      stopped.push(lease);
      await transactions.run((session) => attempts.fail(session, lease, 'stopped', null));
    },
    settle: async (situation) => {
      settled.push(situation);
      if (situation.state === 'answered')
        return { outcome: 'undone', location: situation.location, references: { undoKey: situation.attempt.undoKey } };
      return { outcome: situation.state };
    },
  };

  beforeAll(async () => {
    t = await startModuleApp({ dbName: 'test_idempotency_cancellation', options: { lockTimeoutMs: 60_000 } });
    service = t.app.get(IdempotencyService);
    cancellation = t.app.get(IdempotencyCancellation);
    attempts = t.app.get(IdempotencyAttempts);
    transactions = t.app.get(TransactionRunner);
    records = t.db.collection('idempotency_records');
    cancellation.register('widgets.create', canceler);
    // A reconciler for the operation, so the reaper would list its stale records (it must never list a canceled one).
    t.app.get(IdempotencyReaper).register('widgets.create', async () => 'abandoned');
  });
  beforeEach(async () => {
    settled.length = 0;
    stopped.length = 0;
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'idempotency_subjects'])
      await t.db.collection(name).deleteMany({});
  });
  afterAll(async () => {
    held.go();
    await t.close();
  });

  const request = (body: object = { size: 'L' }): IdempotentRequest => ({
    receivedAt: new Date(),
    tenant: 'acme',
    operation: 'widgets.create',
    clientKey: 'k-1',
    schemaVersion: 1,
    ttlSeconds: 60,
    fingerprint: fingerprintRequest('POST', '/v1/widgets', body),
  });

  it('never run: a record born canceled; execute() under the key is refused for any body and runs nothing', async () => {
    const view = await cancellation.cancel('acme', 'widgets.create', 'k-1');
    expect(view).toMatchObject({ key: 'k-1', operation: 'widgets.create', status: 'canceled', outcome: 'never_run', location: null });
    expect(settled).toEqual([{ state: 'never_run', attempt: null }]);
    let ran = 0;
    const counting: IdempotentWork = { begin: async () => void ran++, resume: (lease) => finishWith(lease, 201) };
    await expect(service.execute(request(), counting)).rejects.toBeInstanceOf(IdempotencyKeyCanceledError);
    await expect(service.execute(request({ size: 'S' }), counting)).rejects.toBeInstanceOf(IdempotencyKeyCanceledError);
    expect(ran).toBe(0);
    const [record] = await records.find({}).toArray();
    expect(record).toMatchObject({ status: 'canceled', attempt: 1, lease: null, cancellation: { outcome: 'never_run' } });
  });

  it("never cancels another tenant's record that has this key's id (0.1 kept tenants raw: `a%3Ab`'s id is `a:b`'s now)", async () => {
    await service.execute({ ...request(), tenant: 'a:b' }, work);
    // The record as 0.1 would have written it for the tenant spelled `a%3Ab`: the same _id, another tenant.
    expect((await records.updateOne({ tenant: 'a:b' }, { $set: { tenant: 'a%3Ab' } })).modifiedCount).toBe(1);
    await expect(cancellation.cancel('a:b', 'widgets.create', 'k-1')).rejects.toThrow(IdempotencyKeyReusedError);
    expect(settled).toEqual([]);
    const [record] = await records.find({}).toArray();
    expect(record).toMatchObject({ tenant: 'a%3Ab', status: 'complete' });
    expect(record.cancellation ?? null).toBeNull();
  });

  it('answered: the canceler undoes it once with the undo key; a repeat answers the same view and calls nothing', async () => {
    const created = await service.execute(request(), work);
    const view = await cancellation.cancel('acme', 'widgets.create', 'k-1');
    expect(view).toMatchObject({ outcome: 'undone', location: created.response.headers.location });
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ state: 'answered', responseStatus: 201 });
    const again = await cancellation.cancel('acme', 'widgets.create', 'k-1');
    expect(again).toEqual(view);
    expect(settled).toHaveLength(1);
    // The 409 names what the key created.
    const refused = await service.execute(request(), work).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(IdempotencyKeyCanceledError);
    expect((refused as IdempotencyKeyCanceledError).headers).toEqual({ location: created.response.headers.location });
  });

  it('in flight: the lease taken by force (a new owner), the old worker fenced, the attempt stopped', async () => {
    const waiting: IdempotentWork = {
      begin: async () => undefined,
      resume: (lease) =>
        new Promise((resolve, reject) => {
          held = { lease, go: () => void finishWith(lease, 201).then(resolve, reject) };
        }),
    };
    const first = service.execute(request(), waiting).catch((error: unknown) => error);
    while (!held.lease) await new Promise((resolve) => setTimeout(resolve, 10));
    const view = await cancellation.cancel('acme', 'widgets.create', 'k-1');
    expect(view.outcome).toBe('stopped');
    expect(stopped).toHaveLength(1);
    expect(stopped[0].owner).not.toBe(held.lease.owner);
    expect(stopped[0].claimId).toBe(held.lease.claimId);
    // The old worker's finish is a fenced write: it changes nothing, and its caller is told the key is canceled.
    await expect(finishWith(held.lease, 201)).rejects.toBeInstanceOf(LeaseLostError);
    held.go();
    expect(await first).toBeInstanceOf(IdempotencyKeyCanceledError);
    expect(await records.findOne({})).toMatchObject({ status: 'canceled', response: null, cancellation: { stoppedInFlight: true } });
    // The reaper never sees a canceled record.
    expect(await t.app.get(IdempotencyReaper).runOnce()).toMatchObject({ examined: 0 });
  });

  it('an operation without a canceler is a wiring mistake, never a silent no-op', async () => {
    await expect(cancellation.cancel('acme', 'gadgets.create', 'k-1')).rejects.toThrow('No canceler registered');
    expect(cancellation.cancelable('gadgets.create')).toBe(false);
    expect(cancellation.cancelable('widgets.create')).toBe(true);
    expect(await records.countDocuments()).toBe(0);
  });
});
