import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { OpenAPIV3 } from 'openapi-types';
import type { Response } from 'supertest';
import { IdempotencyKeyReusedError, type IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { journalEntries } from '../../src/ledger/ledger.service.js';
import { refundJournal } from '../../src/ledger/journal.js';
import type { LedgerEntry } from '../../src/ledger/ledger-entry.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import type { Refund } from '../../src/refunds/refund.js';
import { refundView } from '../../src/refunds/refund.view.js';
import { RefundsService } from '../../src/refunds/refunds.service.js';
import { type ControllableGateway, heldLeases, type ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { findViolations } from '../support/invariants.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { auth, orderBody, type TestApp } from '../support/test-app.js';

const LEASE_MS = 1500;
// Long enough that no test crosses it by waiting: tests end it by moving the record's time.
const RESUME_WINDOW_MS = 600_000;
const ORDER_AMOUNT = 2500;

/**
 * POST /v1/orders/:id/refunds: the second consumer of the idempotency
 * layer, with the create's guarantees. Every test checks the database (the
 * refunds, the order's amounts, the reversal journals, the outbox, the
 * provider's refunds, the key's record) through the invariant checker, not
 * only the replies.
 */
describe('refunds: POST /v1/orders/:id/refunds', () => {
  let app: ControlledApp;
  let t: TestApp;
  let gateway: ControllableGateway;
  let faults: ThrowingFaultInjector;
  let reaper: IdempotencyReaper;
  let check: ResponseCheck;
  let seq = 0;

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_refunds',
      env: {
        IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS),
        IDEMPOTENCY_RESUME_WINDOW_MS: String(RESUME_WINDOW_MS),
        IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '200',
      },
    });
    ({ t, gateway, faults, reaper } = app);
    check = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
  });
  beforeEach(async () => app.reset());
  afterAll(async () => t.close());

  /** A saved order of 2500 (or paid with `token`); its id. */
  async function paidOrder(token = 'tok_visa', tenant: 'acme' | 'globex' = 'acme'): Promise<string> {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth(tenant))
      .set('Idempotency-Key', `order-${++seq}`)
      .send(orderBody({ paymentMethod: { token } }));
    expect([res.status, res.body.state]).toEqual([201, 'saved']);
    return res.body.id as string;
  }

  const refund = (
    orderId: string,
    key: string,
    amountMinor: number,
    reason = 'requested_by_customer',
    tenant: 'acme' | 'globex' = 'acme',
  ) => t.http().post(`/v1/orders/${orderId}/refunds`).set(auth(tenant)).set('Idempotency-Key', key).send({ amountMinor, reason });

  const orderOf = (orderId: string) => t.db.collection('orders').findOne({ _id: orderId as never });
  const refundDocs = () => t.db.collection<{ _id: string; state: string; providerKey: string }>('refunds');
  const refundRecords = () => t.db.collection('idempotency_records').find({ operation: 'orders.refund' }).toArray();
  const providerRefunds = () => t.simulatorDb.collection('operations').countDocuments({ kind: 'refund', status: 'succeeded' });
  const reversals = async () => (await t.db.collection('ledger_entries').distinct('journalId', { journalId: /^jrn_re_/ })).length;

  /** The body is what the OpenAPI document says for this route and status (undocumented members refused). */
  function expectDocumented(res: Response, method: string, path: string): void {
    const contentType = String(res.headers['content-type']).split(';')[0];
    expect(check.errors(method, path, res.status, contentType, res.body)).toEqual([]);
  }

  async function expectClean(extra: { requireSettled?: boolean } = {}): Promise<void> {
    expect(await findViolations({ ...t, requireSettled: extra.requireSettled ?? true })).toEqual([]);
  }

  it('a partial then a full refund: 201s, the order refunded, two reversals, two events, two provider refunds', async () => {
    const orderId = await paidOrder();
    const first = await refund(orderId, 'r-partial', 1000).expect(201);
    expectDocumented(first, 'POST', '/v1/orders/{id}/refunds');
    expect(first.body).toMatchObject({ orderId, state: 'succeeded', amountMinor: 1000, currency: 'USD', failureReason: null });
    expect(first.body.id).toMatch(/^re_[0-9a-f]{24}$/);
    expect(first.headers.location).toBe(`/v1/orders/${orderId}/refunds/${first.body.id}`);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await orderOf(orderId)).toMatchObject({ state: 'partially_refunded', refundedMinor: 1000, refundableMinor: 1500 });
    const view = await t.http().get(`/v1/orders/${orderId}`).set(auth()).expect(200);
    expect(view.body).toMatchObject({ state: 'partially_refunded', capturedMinor: ORDER_AMOUNT, refundedMinor: 1000 });

    const full = await refund(orderId, 'r-rest', 1500, 'duplicate').expect(201);
    expect(await orderOf(orderId)).toMatchObject({ state: 'refunded', refundedMinor: ORDER_AMOUNT, refundableMinor: 0 });
    // Nothing is left: the state has no captured money any more.
    const more = await refund(orderId, 'r-more', 1).expect(409);
    expect(more.body).toMatchObject({ code: 'order_not_refundable', state: 'refunded', newKeySafe: true });
    expectDocumented(more, 'POST', '/v1/orders/{id}/refunds');

    const list = await t.http().get(`/v1/orders/${orderId}/refunds`).set(auth()).expect(200);
    expectDocumented(list, 'GET', '/v1/orders/{id}/refunds');
    expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([first.body.id, full.body.id]);
    const one = await t.http().get(first.headers.location).set(auth()).expect(200);
    expectDocumented(one, 'GET', '/v1/orders/{id}/refunds/{refundId}');
    expect(one.body).toEqual(first.body);
    await t.http().get(`/v1/orders/${orderId}/refunds/re_000000000000000000000000`).set(auth()).expect(404);

    const events = await t.db.collection('outbox_events').find({ type: 'order.refunded' }).sort({ createdAt: 1 }).toArray();
    expect(events.map((e) => [e._id, e.aggregateId, e.schemaVersion, e.payload.refundedMinor])).toEqual([
      [`evt_${first.body.id}_refunded`, orderId, 1, 1000],
      [`evt_${full.body.id}_refunded`, orderId, 1, ORDER_AMOUNT],
    ]);
    expect(await reversals()).toBe(2);
    expect(await providerRefunds()).toBe(2);
    const ledger = await t.http().get(`/v1/orders/${orderId}/ledger`).set(auth()).expect(200);
    const clearing = ledger.body.entries
      .filter((e: { account: string }) => e.account === 'payment_provider_clearing')
      .reduce(
        (sum: number, e: { direction: string; amountMinor: number }) => sum + (e.direction === 'debit' ? e.amountMinor : -e.amountMinor),
        0,
      );
    expect(clearing).toBe(0);
    await expectClean();
  });

  it('a retry of the key replays the same bytes with Idempotent-Replayed; the provider refunded once', async () => {
    const orderId = await paidOrder();
    const first = await refund(orderId, 'r-replay', 700).expect(201);
    const again = await refund(orderId, 'r-replay', 700).expect(201);
    expect(again.text).toBe(first.text);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.headers['idempotent-original-date']).toBeDefined();
    expect(gateway.operationCalls.refund).toBe(1);
    expect(await t.db.collection('refunds').countDocuments()).toBe(1);
    expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 700 });
    await expectClean();
  });

  it('another body under the key, or the same body on another order: 422 idempotency_key_reused, nothing written', async () => {
    const orderId = await paidOrder();
    const other = await paidOrder();
    await refund(orderId, 'r-reuse', 500).expect(201);
    const amount = await refund(orderId, 'r-reuse', 600).expect(422);
    expect(amount.body.code).toBe('idempotency_key_reused');
    const reason = await refund(orderId, 'r-reuse', 500, 'fraudulent').expect(422);
    expect(reason.body.code).toBe('idempotency_key_reused');
    // The order id is part of what the key covers: the route's path parameter is in the fingerprint.
    const elsewhere = await refund(other, 'r-reuse', 500).expect(422);
    expect(elsewhere.body.code).toBe('idempotency_key_reused');
    expect(await t.db.collection('refunds').countDocuments()).toBe(1);
    expect(await orderOf(other)).toMatchObject({ state: 'saved', refundedMinor: 0, refundableMinor: ORDER_AMOUNT });
    expect(gateway.operationCalls.refund).toBe(1);
    // The same key under another tenant is another key.
    const globexOrder = await paidOrder('tok_visa', 'globex');
    await refund(globexOrder, 'r-reuse', 500, 'requested_by_customer', 'globex').expect(201);
    await expectClean();
  });

  it('a duplicate while the first is in flight: 409 + Retry-After; the first finishes, once', async () => {
    const orderId = await paidOrder();
    const hold = gateway.holdNextOperation('refund', 'before');
    const first = refund(orderId, 'r-inflight', 800).then((res) => res);
    await hold.reached;
    const duplicate = await refund(orderId, 'r-inflight', 800).expect(409);
    expect(duplicate.body.code).toBe('idempotency_key_in_use');
    expect(Number(duplicate.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // While it is in flight the amount is reserved: the order has 1700 left for anyone else.
    expect(await orderOf(orderId)).toMatchObject({ refundableMinor: 1700, refundedMinor: 0 });
    const tooMuch = await refund(orderId, 'r-other', 1701).expect(422);
    expect(tooMuch.body).toMatchObject({ code: 'refund_exceeds_captured', refundableMinor: 1700 });
    hold.release();
    expect((await first).status).toBe(201);
    expect(gateway.operationCalls.refund).toBe(1);
    const replay = await refund(orderId, 'r-inflight', 800).expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await expectClean();
  });

  it('provider down: 503 + Retry-After, nothing stored; the retry resumes the same refund (same provider key) and refunds once', async () => {
    const orderId = await paidOrder();
    gateway.failNextOperations('refund', 1);
    const down = await refund(orderId, 'r-down', 900).expect(503);
    expect(down.body.code).toBe('payment_provider_unavailable');
    expect(Number(down.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const [record] = await refundRecords();
    expect(record).toMatchObject({ status: 'pending', response: null });
    const pending = await refundDocs().findOne({});
    expect(pending).toMatchObject({ state: 'pending', providerKey: `refund:${pending!._id}` });
    expect(await providerRefunds()).toBe(0);
    await expectClean({ requireSettled: false });

    const retry = await refund(orderId, 'r-down', 900).expect(201);
    expect(retry.body.id).toBe(pending!._id);
    expect(await t.db.collection('refunds').countDocuments()).toBe(1);
    expect(await providerRefunds()).toBe(1);
    expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 900, refundableMinor: 1600 });
    await expectClean();
  });

  it('a provider outage on every refund of the card (tok_refund_down): 503 each time, nothing stored at the provider', async () => {
    const orderId = await paidOrder('tok_refund_down');
    await refund(orderId, 'r-down-token', 100).expect(503);
    await refund(orderId, 'r-down-token', 100).expect(503);
    expect(await t.simulatorDb.collection('operations').countDocuments()).toBe(0);
    expect(await t.db.collection('refunds').countDocuments()).toBe(1);
    await expectClean({ requireSettled: false });
  });

  it('declined by the issuer: a stored 402 refund_declined, replayed; the reservation is given back', async () => {
    const orderId = await paidOrder('tok_refund_decline');
    const declined = await refund(orderId, 'r-decline', 1200).expect(402);
    expectDocumented(declined, 'POST', '/v1/orders/{id}/refunds');
    expect(declined.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(declined.body).toMatchObject({ code: 'refund_declined', orderId, retryable: false, reuseKey: false, newKeySafe: false });
    const again = await refund(orderId, 'r-decline', 1200).expect(402);
    expect(again.text).toBe(declined.text);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(gateway.operationCalls.refund).toBe(1);
    expect(await t.db.collection('refunds').findOne({})).toMatchObject({ state: 'failed', failureReason: 'declined' });
    expect(await orderOf(orderId)).toMatchObject({ state: 'saved', refundedMinor: 0, refundableMinor: ORDER_AMOUNT });
    expect(await refundRecords()).toEqual([expect.objectContaining({ status: 'failed' })]);
    expect(await reversals()).toBe(0);
    expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.refunded' })).toBe(0);
    await expectClean();
  });

  it('refused inside the claim transaction: not refundable (409), too much (422), no such order or another tenant (404); nothing stored, the key stays unused', async () => {
    const declinedOrder = (
      await t
        .http()
        .post('/v1/orders')
        .set(auth())
        .set('Idempotency-Key', 'order-declined')
        .send(orderBody({ paymentMethod: { token: 'tok_decline' } }))
        .expect(402)
    ).body.orderId as string;
    const failed = await refund(declinedOrder, 'r-refused', 100).expect(409);
    expect(failed.body).toMatchObject({ code: 'order_not_refundable', state: 'failed', retryable: false, newKeySafe: true });

    const orderId = await paidOrder();
    const tooMuch = await refund(orderId, 'r-refused', ORDER_AMOUNT + 1).expect(422);
    expectDocumented(tooMuch, 'POST', '/v1/orders/{id}/refunds');
    expect(tooMuch.body).toMatchObject({ code: 'refund_exceeds_captured', refundableMinor: ORDER_AMOUNT, newKeySafe: true });

    const globexOrder = await paidOrder('tok_visa', 'globex');
    const foreign = await refund(globexOrder, 'r-refused', 100).expect(404);
    expect(foreign.body.code).toBe('order_not_found');
    await refund('ord_000000000000000000000000', 'r-refused', 100).expect(404);
    await refund('not-an-order', 'r-refused', 100).expect(404);
    await t.http().get(`/v1/orders/${globexOrder}/refunds`).set(auth()).expect(404);

    // Bad input changes nothing either.
    for (const body of [
      { amountMinor: 0, reason: 'duplicate' },
      { amountMinor: 1.5, reason: 'duplicate' },
      { amountMinor: 10, reason: 'key_canceled' },
      { amountMinor: 10 },
    ]) {
      const bad = await t
        .http()
        .post(`/v1/orders/${orderId}/refunds`)
        .set(auth())
        .set('Idempotency-Key', 'r-refused')
        .send(body)
        .expect(400);
      expect(bad.body.code).toBe('validation_failed');
    }
    await t.http().post(`/v1/orders/${orderId}/refunds`).set(auth()).send({ amountMinor: 10, reason: 'duplicate' }).expect(400);

    expect(await refundRecords()).toEqual([]);
    expect(await t.db.collection('refunds').countDocuments()).toBe(0);
    expect(await orderOf(orderId)).toMatchObject({ refundableMinor: ORDER_AMOUNT });
    expect(await orderOf(globexOrder)).toMatchObject({ refundableMinor: ORDER_AMOUNT });
    expect(gateway.operationCalls.refund).toBe(0);
    // The key was never used: the same key now refunds.
    await refund(orderId, 'r-refused', 100).expect(201);
    await expectClean();
  });

  describe('crashes and recovery', () => {
    for (const point of ['after-refund-claim', 'after-refund-provider'] as const) {
      it(`crash at ${point}: the lease stays held; the retry after it expires finishes the same refund, one provider refund`, async () => {
        const orderId = await paidOrder();
        faults.crashOnceAt(point);
        await refund(orderId, `r-crash-${point}`, 1100).expect(500);
        expect(faults.consumeFired()).toBe(true);
        expect(await heldLeases(t.db, LEASE_MS)).toBe(1);
        expect(await providerRefunds()).toBe(point === 'after-refund-claim' ? 0 : 1);
        // Held: a retry now is a duplicate in flight.
        await refund(orderId, `r-crash-${point}`, 1100).expect(409);
        await app.expireLeases();
        const retry = await refund(orderId, `r-crash-${point}`, 1100).expect(201);
        expect(retry.headers['idempotent-replayed']).toBeUndefined();
        expect(await t.db.collection('refunds').countDocuments()).toBe(1);
        expect(await providerRefunds()).toBe(1);
        expect(await reversals()).toBe(1);
        expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 1100, refundableMinor: 1400 });
        await expectClean();
      });
    }

    it('crash after the provider refunded (gateway crash): the reaper completes it from the provider; the client gets the stored 201', async () => {
      const orderId = await paidOrder();
      gateway.crashAfterNextOperation('refund');
      await refund(orderId, 'r-reap-done', 1300).expect(500);
      expect(await heldLeases(t.db, LEASE_MS)).toBe(1);
      await app.expireLeases();
      expect(await reaper.runOnce()).toMatchObject({ examined: 1, completed: 1 });
      expect(gateway.operationLookups).toBe(1);
      expect(gateway.operationCalls.refund).toBe(1);
      const replay = await refund(orderId, 'r-reap-done', 1300).expect(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toMatchObject({ state: 'succeeded', amountMinor: 1300 });
      expect(await providerRefunds()).toBe(1);
      expect(await orderOf(orderId)).toMatchObject({ state: 'partially_refunded', refundedMinor: 1300, refundableMinor: 1200 });
      await expectClean();
    });

    it('crash at after-refund-provider, then the reaper: completed, never refunded twice', async () => {
      const orderId = await paidOrder();
      faults.crashOnceAt('after-refund-provider');
      await refund(orderId, 'r-reap-provider', 400).expect(500);
      await app.expireLeases();
      expect(await reaper.runOnce()).toMatchObject({ examined: 1, completed: 1 });
      expect(await providerRefunds()).toBe(1);
      expect(await reversals()).toBe(1);
      await refund(orderId, 'r-reap-provider', 400).expect(201);
      expect(gateway.operationCalls.refund).toBe(1);
      await expectClean();
    });

    it('crash before the provider was asked, then the reaper: the provider key is canceled, the refund abandoned, the reservation given back; a retry is a new refund with a new provider key', async () => {
      const orderId = await paidOrder();
      faults.crashOnceAt('after-refund-claim');
      await refund(orderId, 'r-reap-nothing', 600).expect(500);
      await app.expireLeases();
      expect(await reaper.runOnce()).toMatchObject({ examined: 1, abandoned: 1 });
      const abandoned = await refundDocs().findOne({});
      expect(abandoned).toMatchObject({ state: 'failed', failureReason: 'abandoned' });
      expect(await orderOf(orderId)).toMatchObject({ state: 'saved', refundableMinor: ORDER_AMOUNT, refundedMinor: 0 });
      expect(await refundRecords()).toEqual([expect.objectContaining({ status: 'failed', response: null, attempt: 1 })]);
      expect(await t.simulatorDb.collection('operations').findOne({ _id: abandoned!.providerKey as never })).toMatchObject({
        status: 'canceled',
      });
      // The canceled key can never refund, even from a worker that still held it.
      expect(
        await gateway.refund({ refundKey: abandoned!.providerKey, chargeKey: `charge:${orderId}`, amountMinor: 600, currency: 'USD' }),
      ).toEqual({ outcome: 'canceled' });
      await expectClean();

      const retry = await refund(orderId, 'r-reap-nothing', 600).expect(201);
      expect(retry.body.id).not.toBe(abandoned!._id);
      expect(await refundRecords()).toEqual([expect.objectContaining({ status: 'complete', attempt: 2 })]);
      expect(await providerRefunds()).toBe(1);
      expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 600, refundableMinor: 1900 });
      await expectClean();
    });

    it('after a 503 the reaper leaves the refund to its client inside the resume window; once it ends, reconciles by the key', async () => {
      const orderId = await paidOrder();
      gateway.failNextOperations('refund', 1);
      await refund(orderId, 'r-window', 300).expect(503);
      expect(await reaper.runOnce()).toMatchObject({ examined: 0 });
      await t.db
        .collection('idempotency_records')
        .updateMany({ status: 'pending' }, { $set: { 'lease.resumableUntil': new Date(Date.now() - 1) } });
      expect(await reaper.runOnce()).toMatchObject({ examined: 1, abandoned: 1 });
      expect(await orderOf(orderId)).toMatchObject({ refundableMinor: ORDER_AMOUNT });
      await expectClean();
    });

    it("fencing: a worker paused past its lease after the provider refunded commits nothing; the client gets the reaper's answer", async () => {
      const orderId = await paidOrder();
      const hold = gateway.holdNextOperation('refund', 'after');
      const paused = refund(orderId, 'r-fence', 500).then((res) => res);
      await hold.reached;
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));
      expect(await reaper.runOnce()).toMatchObject({ completed: 1 });
      hold.release();
      const res = await paused;
      expect(res.status).toBe(201);
      expect(res.headers['idempotent-replayed']).toBe('true');
      expect(await reversals()).toBe(1);
      expect(await providerRefunds()).toBe(1);
      expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 500 });
      await expectClean();
    });
  });

  describe('half-applied work', () => {
    const metric = async (series: string) => {
      const text = (await t.http().get('/metrics').expect(200)).text;
      return Number(new RegExp(`^${series.replace(/[{}".]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    };

    /** A refund the provider made whose worker died before T1: its pending refund and the provider's record of it. */
    async function refundedAtTheProvider(key: string, amountMinor: number) {
      const orderId = await paidOrder();
      faults.crashOnceAt('after-refund-provider');
      await refund(orderId, key, amountMinor).expect(500);
      const pending = await t.db.collection<Refund>('refunds').findOne({});
      const operation = await t.simulatorDb.collection<{ _id: string; id: string }>('operations').findOne({ _id: pending!.providerKey });
      return { orderId, pending: pending!, providerRefundId: operation!.id };
    }

    const journalOf = (refund: Refund, amountMinor: number) =>
      journalEntries({
        tenant: refund.tenant,
        journalId: `jrn_${refund._id}`,
        orderId: refund.orderId,
        currency: refund.currency,
        lines: refundJournal(amountMinor),
        postedAt: new Date(Date.now() - 5000),
      });

    it('a reversal journal and an order.refunded event already written exactly as T1 would write them are adopted', async () => {
      const { orderId, pending, providerRefundId } = await refundedAtTheProvider('r-adopt', 750);
      await t.db.collection<LedgerEntry>('ledger_entries').insertMany(journalOf(pending, 750));
      const payload = { ...refundView({ ...pending, state: 'succeeded', providerRefundId }), refundedMinor: 750 };
      const at = new Date(Date.now() - 5000);
      await t.db.collection<OutboxEvent>('outbox_events').insertOne({
        _id: `evt_${pending._id}_refunded`,
        tenant: pending.tenant,
        type: 'order.refunded',
        aggregateId: orderId,
        schemaVersion: 1,
        payload,
        status: 'pending',
        attempts: 0,
        availableAt: at,
        createdAt: at,
        publishedAt: null,
        lastError: null,
      });
      await app.expireLeases();
      expect(await reaper.runOnce()).toMatchObject({ completed: 1, error: 0 });
      expect(await metric('workflow_adopted_documents_total{what="journal"}')).toBe(1);
      expect(await metric('workflow_adopted_documents_total{what="outbox event"}')).toBe(1);
      expect(await t.db.collection('ledger_entries').countDocuments({ journalId: `jrn_${pending._id}` })).toBe(4);
      expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.refunded' })).toBe(1);
      expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 750, refundableMinor: 2500 - 750 });
      await refund(orderId, 'r-adopt', 750).expect(201);
      await expectClean();
    });

    it('a reversal journal under its id with other lines is a conflict: nothing applied, the refund stays pending for a human', async () => {
      const { orderId, pending } = await refundedAtTheProvider('r-conflict', 750);
      await t.db.collection<LedgerEntry>('ledger_entries').insertMany(journalOf(pending, 751));
      await app.expireLeases();
      expect(await reaper.runOnce()).toMatchObject({ completed: 0, error: 1 });
      expect(await refundDocs().findOne({})).toMatchObject({ state: 'pending' });
      expect(await orderOf(orderId)).toMatchObject({ refundedMinor: 0, refundableMinor: 2500 - 750 });
      const [record] = await refundRecords();
      expect(record).toMatchObject({ status: 'pending', conflict: { what: 'journal' } });
      expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.refunded' })).toBe(0);
    });
  });

  it('50 concurrent partial refunds with distinct keys on one order never sum past the captured amount; every loser is a 422 that wrote nothing', async () => {
    const orderId = await paidOrder();
    // 60..140 each, about 5000 in all: twice the 2500 captured.
    const amounts = Array.from({ length: 50 }, (_, i) => 60 + (i % 5) * 20);
    // Each party is a client that keeps its key: a 503 (on the serialized emulator, a transaction queued past the
    // socket timeout) or a 409 in flight is retried with the same key after a pause, as the guidance says.
    const retried: string[] = [];
    const client = async (amount: number, i: number): Promise<Response> => {
      for (let attempt = 0; ; attempt++) {
        const res = await refund(orderId, `r-race-${i}`, amount).then((reply) => reply);
        const retryable = (res.status === 503 || res.status === 409) && res.body.retryable === true;
        if (!retryable || attempt === 10) return res;
        retried.push(`${res.status} ${res.body.code}`);
        await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
      }
    };
    const replies = await Promise.all(amounts.map(client));
    const won = replies.filter((res) => res.status === 201);
    const lost = replies.filter((res) => res.status !== 201);
    expect(
      lost.map((res) => [res.status, res.body.code]).filter(([status, code]) => status !== 422 || code !== 'refund_exceeds_captured'),
    ).toEqual([]);
    const refunded = won.reduce((sum, res) => sum + (res.body.amountMinor as number), 0);
    expect(refunded).toBeLessThanOrEqual(ORDER_AMOUNT);
    const order = await orderOf(orderId);
    expect(order).toMatchObject({ refundedMinor: refunded, refundableMinor: ORDER_AMOUNT - refunded });
    // Left is less than any loser asked for (refundable only went down): the losers lost for a reason.
    const lostAmounts = lost.map((res) => amounts[replies.indexOf(res)]);
    if (lost.length > 0) expect(ORDER_AMOUNT - refunded).toBeLessThan(Math.min(...lostAmounts));
    // Losers wrote nothing: one refund and one record per winner.
    expect(await t.db.collection('refunds').countDocuments()).toBe(won.length);
    expect((await refundRecords()).length).toBe(won.length);
    expect(await t.db.collection('refunds').countDocuments({ state: 'succeeded' })).toBe(won.length);
    expect(await providerRefunds()).toBe(won.length);
    expect(await reversals()).toBe(won.length);
    expect(await t.db.collection('outbox_events').countDocuments({ type: 'order.refunded' })).toBe(won.length);
    const provider = await t.simulatorDb.collection('charges').findOne({ _id: `charge:${orderId}` as never });
    expect(provider!.refundedMinor).toBe(refunded);
    process.stdout.write(
      `[refunds] 50 concurrent on one order: ${won.length} succeeded (${refunded} of ${ORDER_AMOUNT}), ${lost.length} x 422, retried with the key: [${retried.join(', ')}]\n`,
    );
    await expectClean();
  }, 120_000);

  describe('RefundsService.refundByKey (no HTTP: cancel by key)', () => {
    it("runs the same protocol under the caller's key: replayed, another body refused, the HTTP route under that key is another request", async () => {
      const service = t.app.get(RefundsService);
      const orderId = await paidOrder();
      const first = await service.refundByKey('acme', orderId, 'cancel:k-1', ORDER_AMOUNT, 'key_canceled');
      expect(first).toMatchObject({ replayed: false, response: { status: 201 } });
      const view = JSON.parse(first.response.body);
      expect(view).toMatchObject({ orderId, state: 'succeeded', amountMinor: ORDER_AMOUNT, reason: 'key_canceled' });
      const again = await service.refundByKey('acme', orderId, 'cancel:k-1', ORDER_AMOUNT, 'key_canceled');
      expect(again).toMatchObject({ replayed: true, response: { status: 201, body: first.response.body } });
      await expect(service.refundByKey('acme', orderId, 'cancel:k-1', 100, 'key_canceled')).rejects.toBeInstanceOf(
        IdempotencyKeyReusedError,
      );
      await refund(orderId, 'cancel:k-1', ORDER_AMOUNT).expect(422);
      await expect(service.refundByKey('globex', orderId, 'cancel:k-2', 100, 'key_canceled')).rejects.toMatchObject({
        code: 'order_not_found',
      });
      await expect(service.refundByKey('acme', orderId, 'cancel:k-3', 100, 'key_canceled')).rejects.toMatchObject({
        code: 'order_not_refundable',
      });
      await expect(service.refundByKey('acme', orderId, 'cancel:k-4', 0, 'key_canceled')).rejects.toMatchObject({
        code: 'amount_out_of_range',
      });
      expect(gateway.operationCalls.refund).toBe(1);
      expect(await orderOf(orderId)).toMatchObject({ state: 'refunded', refundedMinor: ORDER_AMOUNT });
      await expectClean();
    });

    it('a provider outage is thrown, nothing stored; the same key resumes the same refund', async () => {
      const service = t.app.get(RefundsService);
      const orderId = await paidOrder();
      gateway.failNextOperations('refund', 1);
      await expect(service.refundByKey('acme', orderId, 'cancel:k-down', 500, 'key_canceled')).rejects.toMatchObject({
        code: 'payment_provider_unavailable',
      });
      const pending = await refundDocs().findOne({});
      const done = await service.refundByKey('acme', orderId, 'cancel:k-down', 500, 'key_canceled');
      expect(JSON.parse(done.response.body).id).toBe(pending!._id);
      expect(await providerRefunds()).toBe(1);
      await expectClean();
    });
  });
});
