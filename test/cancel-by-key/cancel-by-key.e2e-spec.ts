// Issue 24 item 3: cancel by key. A client that lost the answer asks for the
// operation to be undone rather than retried: POST
// /v1/idempotency-keys/:key/cancel (orders.create). Never run: the key is
// canceled so the create never runs later. In flight: the lease is taken by
// force, the charge key canceled at the provider, the order failed. Charged:
// a full refund keyed from the record. Idempotent itself. Every assertion is
// on the database and the provider, not only on the answers.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { OpenAPIV3 } from 'openapi-types';
import type { Response } from 'supertest';
import { guidanceFor } from '@idempotent-orders/nest-idempotency';
import { RefundsService } from '../../src/refunds/refunds.service.js';
import { findViolations } from '../support/invariants.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { describeMode, MONGO_ONLY, redisMode, type StoreMode } from '../support/store-modes.js';
import { auth, orderBody, type API_KEYS, type TestApp } from '../support/test-app.js';

const LEASE_MS = 1000;
const TTL_SECONDS = 86_400;
const TOMBSTONE_SECONDS = 2_592_000;
const CANCELED_GUIDANCE = { retryable: false, reuseKey: false, newKeySafe: false };

function suite(mode: StoreMode): void {
  describeMode(mode, 'cancel by key (POST /v1/idempotency-keys/:key/cancel)', () => {
    let app: ControlledApp;
    let t: TestApp;
    let documented: ResponseCheck;
    let refundsWired: boolean;

    beforeAll(async () => {
      app = await startControlledApp({
        dbName: mode.redis ? 'test_cancel_by_key_redis' : 'test_cancel_by_key',
        env: { ...mode.env, IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), IDEMPOTENCY_RESUME_WINDOW_MS: '600000' },
      });
      t = app.t;
      documented = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
      refundsWired = (() => {
        try {
          t.app.get(RefundsService, { strict: false });
          return true;
        } catch {
          return false;
        }
      })();
      if (!refundsWired) process.stdout.write('cancel-by-key: no refunds module in the app; the charged cases assert the 501 seam\n');
    });
    beforeEach(async () => app.reset());
    afterAll(async () => {
      app?.gateway.releaseAll();
      await t?.close();
    });

    const cancel = (key: string, tenant: keyof typeof API_KEYS = 'acme') =>
      t
        .http()
        .post(`/v1/idempotency-keys/${encodeURIComponent(key)}/cancel`)
        .set(auth(tenant));
    /**
     * A cancel, repeated (it is safe to repeat) while the fast path's Redis, slow on a loaded machine, makes it fail
     * closed (503 cache_unavailable, nothing written); `status` 0 checks nothing.
     */
    const cancelled = async (status: number, key: string, tenant: keyof typeof API_KEYS = 'acme'): Promise<Response> => {
      let res = await cancel(key, tenant);
      for (let retry = 0; retry < 3 && res.status === 503 && res.body.code === 'cache_unavailable'; retry++)
        res = await cancel(key, tenant);
      if (status) expect([key, res.status]).toEqual([key, status]);
      return res;
    };
    const create = (key: string, body: object = orderBody(), tenant: keyof typeof API_KEYS = 'acme') =>
      t.http().post('/v1/orders').set(auth(tenant)).set('Idempotency-Key', key).send(body);
    const records = () => t.db.collection<Record<string, unknown> & { _id: string }>('idempotency_records');
    const orders = () => t.db.collection<Record<string, unknown> & { _id: string }>('orders');
    const succeededCharges = () => t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' });
    const guidanceOf = (body: Record<string, unknown>) => ({
      retryable: body.retryable,
      reuseKey: body.reuseKey,
      newKeySafe: body.newKeySafe,
    });

    /** The 409 every later request under a canceled key gets, documented and with its guidance. */
    /** `during`: the 409 may have been answered while the cancel still ran, before it knew what the key had created. */
    function expectCanceled(res: Response, location?: string, during = false): void {
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('idempotency_key_canceled');
      expect(guidanceOf(res.body)).toEqual(CANCELED_GUIDANCE);
      expect(res.headers['retry-after']).toBeUndefined();
      if (during && res.headers.location === undefined) expect(res.body.location).toBeUndefined();
      else if (location) {
        expect(res.headers.location).toBe(location);
        expect(res.body.location).toBe(location);
      } else expect(res.headers.location).toBeUndefined();
      expect(documented.errors('POST', '/v1/orders', 409, 'application/problem+json', res.body)).toEqual([]);
    }

    function expectDocumented(res: Response): void {
      expect(documented.errors('POST', '/v1/idempotency-keys/{key}/cancel', 200, 'application/json', res.body)).toEqual([]);
    }

    it('never run: the key is canceled, and no create runs under it later, whatever the body', async () => {
      const before = Date.now();
      const res = await cancelled(200, 'k-never');
      expect(res.body).toEqual({
        key: 'k-never',
        operation: 'orders.create',
        status: 'canceled',
        outcome: 'never_run',
        canceledAt: expect.any(String),
      });
      expect(res.headers.location).toBeUndefined();
      expectDocumented(res);
      const record = await records().findOne({});
      expect(record).toMatchObject({ status: 'canceled', tenant: 'acme', operation: 'orders.create', clientKey: 'k-never', lease: null });
      // Kept as long as a finished key's tombstone: record TTL + tombstone period.
      const retention = (record!.expiresAt as Date).getTime() - before;
      expect(retention).toBeGreaterThanOrEqual((TTL_SECONDS + TOMBSTONE_SECONDS) * 1000);
      expect(retention).toBeLessThan((TTL_SECONDS + TOMBSTONE_SECONDS) * 1000 + 60_000);
      expect(record!.purgeAt).toEqual(record!.expiresAt);

      expectCanceled(await create('k-never'));
      expectCanceled(await create('k-never', orderBody({ customerId: 'cus_other', currency: 'EUR' })));
      // Even a body that would fail validation: nothing under the key runs, and the answer says why.
      expectCanceled(await create('k-never', { nope: true }));
      expect(await t.db.collection('orders').countDocuments()).toBe(0);
      expect(await t.simulatorDb.collection('charges').countDocuments()).toBe(0);
      expect(app.gateway.calls).toBe(0);
      expect(await records().countDocuments()).toBe(1);

      // The key view shows it canceled (and validates against its schema).
      const view = await t.http().get('/v1/idempotency-keys/k-never').set(auth()).expect(200);
      expect(view.body.records).toEqual([
        expect.objectContaining({
          status: 'canceled',
          cancellation: { requestedAt: expect.any(String), canceledAt: expect.any(String), outcome: 'never_run' },
        }),
      ]);
      expect(documented.errors('GET', '/v1/idempotency-keys/{key}', 200, 'application/json', view.body)).toEqual([]);
      // Another key is untouched.
      expect((await create('k-other')).status).toBe(201);
    });

    it('in flight: the lease is taken by force, the charge key canceled at the provider, the order failed; the held worker charges nothing', async () => {
      const hold = app.gateway.holdNextCharge('before');
      const first = create('k-fly').then((res) => res);
      const orderId = await hold.reached;
      const res = await cancelled(200, 'k-fly');
      expect(res.body).toMatchObject({ status: 'canceled', outcome: 'canceled_before_charge', orderId });
      expect(res.body.refundId).toBeUndefined();
      expect(res.headers.location).toBe(`/v1/orders/${orderId}`);
      expectDocumented(res);
      // The provider: the charge key canceled (the reaper's chargeOrCancel), nothing charged.
      expect(await t.simulatorDb.collection('charges').findOne({ _id: `charge:${orderId}` as never })).toMatchObject({
        status: 'canceled',
      });
      expect(app.gateway.reconciles).toBe(1);
      expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({
        state: 'failed',
        failureReason: 'abandoned',
      });
      expect(await records().findOne({})).toMatchObject({ status: 'canceled', lease: null, response: null });

      // The held worker goes on: its charge is refused (canceled key), its fenced writes change nothing.
      hold.release();
      expectCanceled(await first, `/v1/orders/${orderId}`);
      expect(app.gateway.calls).toBe(1);
      expect(await succeededCharges()).toBe(0);
      expect(await t.db.collection('payments').countDocuments()).toBe(0);
      expect(await t.db.collection('ledger_entries').countDocuments()).toBe(0);
      expect(await t.db.collection('outbox_events').countDocuments()).toBe(0);
      // A later retry: the same 409, no new attempt, no new order.
      expectCanceled(await create('k-fly'), `/v1/orders/${orderId}`);
      expect(await t.db.collection('orders').countDocuments()).toBe(1);
      expect(await records().findOne({})).toMatchObject({ status: 'canceled', attempt: 1 });
    });

    it('stale pending (a crashed worker, its lease still live): taken by force at once, canceled before the charge', async () => {
      app.faults.crashOnceAt('after-claim');
      await create('k-crash').expect(500);
      const pending = await records().findOne({});
      expect(pending).toMatchObject({ status: 'pending' });
      expect((pending!.lease as { expiresAt: Date }).expiresAt.getTime()).toBeGreaterThan(Date.now());
      const res = await cancelled(200, 'k-crash');
      const order = await orders().findOne({});
      expect(res.body).toMatchObject({ outcome: 'canceled_before_charge', orderId: order!._id });
      expect(order).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
      expect(await t.simulatorDb.collection('charges').findOne({})).toMatchObject({ status: 'canceled' });
      expect(app.gateway.calls).toBe(0);
      expectCanceled(await create('k-crash'), `/v1/orders/${order!._id}`);
      // The reaper has nothing to do with it.
      await app.expireLeases();
      expect(await app.reaper.runOnce()).toMatchObject({ examined: 0 });
    });

    it('cancel twice: the same answer, one effect (one reconciliation at the provider, the record untouched)', async () => {
      const hold = app.gateway.holdNextCharge('before');
      const first = create('k-twice').then((res) => res);
      await hold.reached;
      const once = await cancelled(200, 'k-twice');
      const recordAfterOnce = await records().findOne({});
      const twice = await cancelled(200, 'k-twice');
      expect(twice.body).toEqual(once.body);
      expect(twice.headers.location).toBe(once.headers.location);
      expect(await records().findOne({})).toEqual(recordAfterOnce);
      expect(app.gateway.reconciles).toBe(1);
      hold.release();
      expectCanceled(await first, once.headers.location);
      // Never-run keys too, even two cancels at once: one record, one answer.
      const [a, b] = await Promise.all([cancelled(0, 'k-twice-new'), cancelled(0, 'k-twice-new')]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(b.body).toEqual(a.body);
      expect(await records().countDocuments({ clientKey: 'k-twice-new' })).toBe(1);
    });

    it('a cancel racing the first create of its key: one of them wins, and the database says which', async () => {
      const won = { create: 0, cancel: 0, charged: 0 };
      for (let round = 0; round < 7; round++) {
        const key = `k-race-${round}`;
        // The cancel sent a little later each round: before the claim, in flight, or after the answer.
        const [created, canceled] = await Promise.all([
          create(key).then((res) => res),
          new Promise((resolve) => setTimeout(resolve, [0, 5, 15, 30, 60, 120, 400][round])).then(() => cancelled(0, key)),
        ]);
        const order = await orders().findOne({ 'idempotency.recordId': { $regex: `:${key}$` } });
        const record = await records().findOne({ clientKey: key });
        won[created.status === 201 ? 'create' : canceled.status === 200 && canceled.body.outcome !== 'refunded' ? 'cancel' : 'charged']++;
        if (created.status === 201) {
          // The create won: the cancel undid it (or, without refunds, holds it for its repeat).
          expect(order).toMatchObject({ _id: created.body.id });
          if (refundsWired) expect(canceled.body).toMatchObject({ outcome: 'refunded', orderId: created.body.id });
          else expect([canceled.status, canceled.body.code]).toEqual([501, 'cancel_undo_unavailable']);
        } else if (canceled.status === 200 && canceled.body.outcome !== 'refunded') {
          // The cancel won before the charge: nothing charged, the create refused.
          expectCanceled(created, canceled.body.orderId ? `/v1/orders/${canceled.body.orderId}` : undefined, true);
          expect(['never_run', 'canceled_before_charge']).toContain(canceled.body.outcome);
          expect(record).toMatchObject({ status: 'canceled' });
          if (order) expect(order).toMatchObject({ state: 'failed' });
        } else {
          // The cancel met the create in flight after the provider charged: the charge saved by the cancel's path, then refunded.
          expectCanceled(created, `/v1/orders/${order!._id}`, true);
          expect(order).toMatchObject({ state: refundsWired ? 'refunded' : 'saved' });
          if (refundsWired) expect(canceled.body).toMatchObject({ outcome: 'refunded', orderId: order!._id });
          else expect([canceled.status, canceled.body.code]).toEqual([501, 'cancel_undo_unavailable']);
        }
        expect(await records().countDocuments({ clientKey: key })).toBe(1);
      }
      process.stdout.write(
        `cancel-by-key race [${mode.name}]: the create won ${won.create}, the cancel ${won.cancel} before the charge, ${won.charged} after it, of 7\n`,
      );
      expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(
        await t.db.collection('payments').countDocuments(),
      );
    });

    it("another tenant's key: its cancel reaches only its own scope (a never-run key of its own) and changes nothing of the other's", async () => {
      const created = await create('k-shared').expect(201);
      const before = await records().findOne({ tenant: 'acme' });
      const res = await cancelled(200, 'k-shared', 'globex');
      expect(res.body).toMatchObject({ outcome: 'never_run' });
      expect(res.body.orderId).toBeUndefined();
      expect(await records().findOne({ tenant: 'acme' })).toEqual(before);
      expect(await records().findOne({ tenant: 'globex' })).toMatchObject({ status: 'canceled', clientKey: 'k-shared' });
      const replay = await create('k-shared').expect(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.id).toBe(created.body.id);
      expect(await succeededCharges()).toBe(1);
      expect(app.gateway.reconciles).toBe(0);
      // globex's own create under that key is refused; acme's order is none of its business.
      expectCanceled(await create('k-shared', orderBody(), 'globex'));
      // The key view of acme shows nothing of globex's cancel.
      const view = await t.http().get('/v1/idempotency-keys/k-shared').set(auth()).expect(200);
      expect(view.body.records).toEqual([expect.objectContaining({ status: 'complete', cancellation: null })]);
    });

    it('a declined order (stored 402): nothing to undo, the key canceled all the same', async () => {
      const declined = orderBody({ paymentMethod: { token: 'tok_decline' } });
      const refused = await create('k-declined', declined).expect(402);
      // A replay first, so the fast path (when on) has the 402 cached.
      await create('k-declined', declined).expect(402);
      // With the fast path on, the 402 is in Redis now: the cancel must keep it from being served.
      if (t.redis) expect((await t.redis.keys('idem:test_cancel_by_key_redis:resp:*')).length).toBe(1);
      const res = await cancelled(200, 'k-declined');
      expect(res.body).toMatchObject({ outcome: 'nothing_to_undo', orderId: refused.body.orderId });
      expectDocumented(res);
      // Not the stored (or cached) 402 any more: the key is canceled.
      expectCanceled(await create('k-declined', declined), `/v1/orders/${refused.body.orderId}`);
      expect(await succeededCharges()).toBe(0);
    });

    it('an attempt the reaper abandoned (failed, nothing stored): never run, the abandoned order named', async () => {
      app.gateway.failNext(1);
      await create('k-abandoned').expect(503);
      await records().updateMany(
        {},
        { $set: { 'lease.resumableUntil': new Date(Date.now() - 1), 'lease.expiresAt': new Date(Date.now() - 1) } },
      );
      expect(await app.reaper.runOnce()).toMatchObject({ abandoned: 1 });
      const order = await orders().findOne({});
      const res = await cancelled(200, 'k-abandoned');
      expect(res.body).toMatchObject({ outcome: 'never_run', orderId: order!._id });
      expect(app.gateway.reconciles).toBe(1);
      // The retry that would have started attempt 2 is refused instead.
      expectCanceled(await create('k-abandoned'), `/v1/orders/${order!._id}`);
      expect(await t.db.collection('orders').countDocuments()).toBe(1);
      expect(await records().findOne({})).toMatchObject({ status: 'canceled', attempt: 1 });
    });

    it('a cancel that died halfway (marked, its lease expired) is finished by its repeat, and the reaper leaves it alone meanwhile', async () => {
      app.faults.crashOnceAt('after-claim');
      await create('k-halfway').expect(500);
      // As the cancel's first write leaves it: marked, the lease taken by an owner that then died.
      const now = new Date();
      await records().updateOne(
        {},
        {
          $set: {
            cancellation: { requestedAt: now, canceledAt: null, outcome: null, location: null, references: {}, stoppedInFlight: true },
            lease: { owner: 'dead-cancel', lockedAt: now, expiresAt: new Date(now.getTime() + LEASE_MS), resumableUntil: null },
          },
        },
      );
      // Already refused: the key is being canceled.
      expectCanceled(await create('k-halfway'));
      // A live lease: another cancel is at work.
      const busy = await cancelled(409, 'k-halfway');
      expect(busy.body.code).toBe('idempotency_lease_active');
      expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
      await app.expireLeases();
      expect(await app.reaper.runOnce()).toMatchObject({ examined: 0 });
      expect(await records().findOne({})).toMatchObject({ status: 'pending' });
      const res = await cancelled(200, 'k-halfway');
      expect(res.body).toMatchObject({ outcome: 'canceled_before_charge' });
      expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'failed' });
    });

    it('erasing the customer after the cancel keeps the key canceled', async () => {
      const refused = await create('k-erase', orderBody({ customerId: 'cus_erase', paymentMethod: { token: 'tok_decline' } })).expect(402);
      await cancelled(200, 'k-erase');
      // An erasure is safe to repeat: with the fast path on, a Redis too slow on a loaded machine answers 503 (fail closed).
      let erased = await t.http().delete('/v1/customers/cus_erase/data').set(auth());
      for (let retry = 0; retry < 3 && erased.status === 503; retry++)
        erased = await t.http().delete('/v1/customers/cus_erase/data').set(auth());
      expect(erased.status).toBe(200);
      expect(await records().findOne({})).toMatchObject({ status: 'canceled', subject: null });
      expectCanceled(await create('k-erase', orderBody({ customerId: 'cus_erase' })), `/v1/orders/${refused.body.orderId}`);
    });

    it('a key that is not 1-255 printable ASCII: 400, nothing written', async () => {
      const res = await t
        .http()
        .post(`/v1/idempotency-keys/${'x'.repeat(256)}/cancel`)
        .set(auth())
        .expect(400);
      expect(res.body.code).toBe('idempotency_key_invalid');
      expect(await records().countDocuments()).toBe(0);
      await t.http().post('/v1/idempotency-keys/k/cancel').expect(401);
      expect(await records().countDocuments()).toBe(0);
    });

    it('an authorized order (manual capture): the authorization voided under the undo key, once; then 409 under the key', async () => {
      const created = await create('k-authorized', orderBody({ capture: 'manual' })).expect(201);
      expect(created.body.state).toBe('authorized');
      const res = await cancelled(200, 'k-authorized');
      expect(res.body).toMatchObject({ outcome: 'voided', orderId: created.body.id });
      expectDocumented(res);
      expect(await orders().findOne({ _id: created.body.id })).toMatchObject({ state: 'voided', capturedMinor: 0 });
      expect(await t.simulatorDb.collection('operations').countDocuments({ kind: 'void' })).toBe(1);
      expect((await cancelled(200, 'k-authorized')).body).toEqual(res.body);
      expect(await t.simulatorDb.collection('operations').countDocuments({ kind: 'void' })).toBe(1);
      expectCanceled(await create('k-authorized', orderBody({ capture: 'manual' })), `/v1/orders/${created.body.id}`);
    });

    it('an asynchronous payment still processing: the charge canceled at the provider, the order failed, no money moves later', async () => {
      const created = await create('k-async', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202);
      const res = await cancelled(200, 'k-async');
      expect(res.body).toMatchObject({ outcome: 'canceled_before_charge', orderId: created.body.id });
      expect(await orders().findOne({ _id: created.body.id })).toMatchObject({ state: 'failed', failureReason: 'processing_expired' });
      expect(await t.simulatorDb.collection('charges').findOne({ _id: `charge:${created.body.id}` as never })).toMatchObject({
        status: 'canceled',
      });
      // The provider's later attempt to settle it finds it canceled: nothing is charged, nothing is booked.
      expect(await app.gateway.settleProcessing(`charge:${created.body.id}`, 'succeeded')).toBe('canceled');
      expect(await t.db.collection('payments').countDocuments()).toBe(0);
      expect(await t.db.collection('ledger_entries').countDocuments()).toBe(0);
      expect((await cancelled(200, 'k-async')).body).toEqual(res.body);
      expectCanceled(await create('k-async', orderBody({ paymentMethod: { token: 'tok_async' } })), `/v1/orders/${created.body.id}`);
    });

    it('an asynchronous payment the provider settled before its webhook came: saved by asking the provider, then refunded in full', async () => {
      const created = await create('k-async-settled', orderBody({ paymentMethod: { token: 'tok_async' } })).expect(202);
      expect(await app.gateway.settleProcessing(`charge:${created.body.id}`, 'succeeded')).toBe('succeeded');
      const res = await cancelled(200, 'k-async-settled');
      expect(res.body).toMatchObject({ outcome: 'refunded', orderId: created.body.id, refundId: expect.any(String) });
      await expectOneFullRefund(created.body.id as string, res.body.refundId as string);
      expect(await t.db.collection('payments').countDocuments()).toBe(1);
      expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb })).toEqual([]);
    });

    describe('charged keys', () => {
      it('a saved order: a full refund, once (provider, refunds, ledger reversal), then 409 under the key', async () => {
        const created = await create('k-charged').expect(201);
        const res = await cancelled(0, 'k-charged');
        if (!refundsWired) {
          expectSeam(res);
          // Held by the cancel: no create runs under the key, and nothing was refunded.
          expectCanceled(await create('k-charged'), `/v1/orders/${created.body.id}`);
          expect(await records().findOne({})).toMatchObject({ status: 'complete', cancellation: { canceledAt: null } });
          return;
        }
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ outcome: 'refunded', orderId: created.body.id, refundId: expect.any(String) });
        expectDocumented(res);
        await expectOneFullRefund(created.body.id as string, res.body.refundId as string);
        expectCanceled(await create('k-charged'), `/v1/orders/${created.body.id}`);
        // Twice: the same answer, still one refund at the provider and in the books.
        const again = await cancelled(200, 'k-charged');
        expect(again.body).toEqual(res.body);
        await expectOneFullRefund(created.body.id as string, res.body.refundId as string);
        expect(await records().findOne({ operation: 'orders.create' })).toMatchObject({ status: 'canceled' });
      });

      it('in flight past the charge (held after the provider charged): the charge found is saved, then refunded', async () => {
        const hold = app.gateway.holdNextCharge('after');
        const first = create('k-charged-fly').then((r) => r);
        const orderId = await hold.reached;
        const res = await cancelled(0, 'k-charged-fly');
        // The cancel's reconciliation found the charge and saved the order (the same path as the reaper), then refunded it.
        const order = await orders().findOne({ _id: orderId });
        expect(order).toMatchObject({ state: refundsWired ? 'refunded' : 'saved', stateHistory: { saved: expect.any(Date) } });
        expect(await t.db.collection('payments').countDocuments()).toBe(1);
        hold.release();
        // The held worker's own writes are fenced: still one payment, and its client gets the 409.
        expectCanceled(await first, `/v1/orders/${orderId}`);
        expect(await t.db.collection('payments').countDocuments()).toBe(1);
        expect(await succeededCharges()).toBe(1);
        if (!refundsWired) return expectSeam(res);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ outcome: 'refunded', orderId });
        await expectOneFullRefund(orderId, res.body.refundId as string);
      });
    });

    /** One succeeded refund of the whole amount: the refund, one provider refund, a balanced reversal, the order refunded. */
    async function expectOneFullRefund(orderId: string, refundId: string): Promise<void> {
      const refunds = await t.db.collection('refunds').find({ orderId }).toArray();
      expect(refunds).toEqual([expect.objectContaining({ _id: refundId, state: 'succeeded', amountMinor: 2500, reason: 'key_canceled' })]);
      expect(await t.simulatorDb.collection('operations').countDocuments({ kind: 'refund' })).toBe(1);
      expect(await orders().findOne({ _id: orderId })).toMatchObject({ state: 'refunded', refundedMinor: 2500, refundableMinor: 0 });
      const entries = await t.db
        .collection<{ journalId: string; direction: string; amountMinor: number }>('ledger_entries')
        .find({ orderId })
        .toArray();
      const journals = new Set(entries.map((entry) => entry.journalId));
      // The sale and its reversal, each balanced.
      expect(journals.size).toBe(2);
      for (const journal of journals) {
        const lines = entries.filter((entry) => entry.journalId === journal);
        expect(lines.reduce((sum, line) => sum + (line.direction === 'debit' ? line.amountMinor : -line.amountMinor), 0)).toBe(0);
      }
      expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.refunded' })).toBe(1);
    }

    function expectSeam(res: Response): void {
      expect(res.status).toBe(501);
      expect(res.body.code).toBe('cancel_undo_unavailable');
      expect(guidanceOf(res.body)).toEqual({
        retryable: guidanceFor('cancel_undo_unavailable')!.retryable,
        reuseKey: false,
        newKeySafe: false,
      });
    }
  });
}

suite(MONGO_ONLY);
suite(redisMode());
