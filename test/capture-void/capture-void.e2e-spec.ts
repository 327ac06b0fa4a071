import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { OpenAPIV3 } from 'openapi-types';
import type { Response } from 'supertest';
import type { FaultPoint } from '../../src/config/configuration.js';
import { AuthorizationExpirySweep, expiryVoidKeyFor } from '../../src/capture-void/authorization-expiry.sweep.js';
import { CaptureVoidService } from '../../src/capture-void/capture-void.service.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { manualCaptureViolations } from '../support/manual-capture-invariants.js';
import { responseCheck, type ResponseCheck } from '../support/openapi-check.js';
import { auth, orderBody, type TestApp } from '../support/test-app.js';

// Long enough that no request outlives it on a loaded machine; the crash tests end it by moving the record's time.
const LEASE_MS = 5000;
const AMOUNT = 2500;

/**
 * Authorize, then capture or void (issue 24 item 2), in process against the
 * real app with the controllable provider: every answer checked against the
 * database (orders, payments, ledger, outbox, idempotency records) and the
 * provider's own documents (charges, operations).
 */
describe('manual capture: authorize, then capture or void', () => {
  let app: ControlledApp;
  let t: TestApp;
  let sweep: AuthorizationExpirySweep;
  let check: ResponseCheck;

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_capture_void',
      env: { IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '0', IDEMPOTENCY_RESUME_WINDOW_MS: '600000' },
    });
    t = app.t;
    sweep = t.app.get(AuthorizationExpirySweep);
    check = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
  });
  beforeEach(async () => app.reset());
  // Whatever each test did, the books agree with the provider: state, payment, journal, events, records.
  afterEach(async () => expect(await manualCaptureViolations(t.db, t.simulatorDb)).toEqual([]));
  afterAll(async () => {
    app.gateway.releaseAll();
    await t.close();
  });

  const createManual = (key: string, token = 'tok_visa') =>
    t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ capture: 'manual', paymentMethod: { token } }));
  const capture = (orderId: string, key: string, body: object = {}) =>
    t.http().post(`/v1/orders/${orderId}/capture`).set(auth()).set('Idempotency-Key', key).send(body);
  const voidOrder = (orderId: string, key: string) =>
    t.http().post(`/v1/orders/${orderId}/void`).set(auth()).set('Idempotency-Key', key).send();

  async function authorizedOrder(key = 'k-create', token = 'tok_visa'): Promise<string> {
    const created = await createManual(key, token).expect(201);
    expect(created.body.state).toBe('authorized');
    return created.body.id as string;
  }

  const orderDoc = (id: string) => t.db.collection('orders').findOne({ _id: id as never });
  const paymentDoc = (id: string) => t.db.collection('payments').findOne({ orderId: id });
  const entries = (id: string) => t.db.collection('ledger_entries').find({ orderId: id }).toArray();
  const events = (id: string) => t.db.collection('outbox_events').find({ aggregateId: id }).toArray();
  const providerOps = (kind?: string) =>
    t.simulatorDb
      .collection('operations')
      .find(kind ? { kind } : {})
      .toArray();
  const records = (operation: string) => t.db.collection('idempotency_records').find({ operation }).toArray();

  function expectDocumented(res: Response, path: string): void {
    const contentType = String(res.headers['content-type']).split(';')[0];
    expect(check.errors('post', path, res.status, contentType, res.body)).toEqual([]);
  }

  /** The ledger of an order: balanced, and each side of it the captured amount. */
  async function expectJournal(id: string, capturedMinor: number): Promise<void> {
    const lines = await entries(id);
    if (capturedMinor === 0) return void expect(lines).toEqual([]);
    expect(lines).toHaveLength(4);
    const debit = lines.filter((line) => line.direction === 'debit').reduce((sum, line) => sum + (line.amountMinor as number), 0);
    const credit = lines.filter((line) => line.direction === 'credit').reduce((sum, line) => sum + (line.amountMinor as number), 0);
    expect(debit).toBe(credit);
    expect(lines.every((line) => line.amountMinor === capturedMinor)).toBe(true);
  }

  /** One provider operation per key, whatever the retries and the reaper did. */
  async function expectOneOperationPerKey(): Promise<void> {
    const ops = await providerOps();
    expect(new Set(ops.map((op) => op._id)).size).toBe(ops.length);
  }

  it('creates a manual-capture order: 201 authorized, the provider holds the amount, no journal, replayed byte for byte', async () => {
    const created = await createManual('k-create').expect(201);
    expect(created.body).toMatchObject({
      state: 'authorized',
      capture: 'manual',
      authorizedMinor: AMOUNT,
      capturedMinor: 0,
      refundedMinor: 0,
    });
    expect(new Date(created.body.authorizationExpiresAt).getTime()).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    expectDocumented(created, '/v1/orders');
    const id = created.body.id as string;
    expect(await orderDoc(id)).toMatchObject({ state: 'authorized', paymentToken: null, pendingAction: null });
    expect(await paymentDoc(id)).toMatchObject({ status: 'authorized', amountMinor: AMOUNT });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: `charge:${id}` as never })).toMatchObject({ status: 'authorized' });
    await expectJournal(id, 0);
    expect(app.gateway.operationCalls.authorize).toBe(1);
    expect(app.gateway.calls).toBe(0);
    const replay = await createManual('k-create').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(created.text);
    expect(app.gateway.operationCalls.authorize).toBe(1);
  });

  it('a manual create whose worker died after the provider authorized is completed by the reaper (authorized, never charged)', async () => {
    app.faults.crashOnceAt('after-charge');
    await createManual('k-create-dies').expect(500);
    await app.expireLeases();
    expect(await app.reaper.runOnce()).toMatchObject({ examined: 1, completed: 1 });
    expect(app.gateway.reconciles).toBe(1);
    const order = await t.db.collection('orders').findOne({});
    expect(order).toMatchObject({ state: 'authorized', authorizedMinor: AMOUNT });
    expect(await records('orders.create')).toEqual([expect.objectContaining({ status: 'complete' })]);
    const replay = await createManual('k-create-dies').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toMatchObject({ id: order!._id, state: 'authorized' });
    expect(app.gateway.operationCalls.authorize).toBe(1);
    expect(app.gateway.calls).toBe(0);
  });

  it('a declined authorization is the stored 402 of a create', async () => {
    const declined = await createManual('k-decline', 'tok_decline').expect(402);
    expect(declined.body.code).toBe('card_declined');
    expect(await t.db.collection('orders').findOne({})).toMatchObject({ state: 'failed', failureReason: 'card_declined' });
    expect((await createManual('k-decline', 'tok_decline').expect(402)).text).toBe(declined.text);
  });

  it('captures the whole authorization: order captured, payment captured, journal of the amount, order.captured event; replay = same bytes', async () => {
    const id = await authorizedOrder();
    const captured = await capture(id, 'k-cap').expect(200);
    expect(captured.body).toMatchObject({ id, state: 'captured', authorizedMinor: AMOUNT, capturedMinor: AMOUNT });
    expectDocumented(captured, '/v1/orders/{id}/capture');
    expect(await orderDoc(id)).toMatchObject({ state: 'captured', capturedMinor: AMOUNT, refundableMinor: AMOUNT, pendingAction: null });
    expect(await paymentDoc(id)).toMatchObject({ status: 'captured', capturedMinor: AMOUNT });
    await expectJournal(id, AMOUNT);
    expect((await events(id)).map((event) => event.type).sort()).toEqual(['order.captured']);
    const ops = await providerOps('capture');
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({ status: 'succeeded', amountMinor: AMOUNT });
    expect(await records('orders.capture')).toEqual([expect.objectContaining({ status: 'complete' })]);

    const replay = await capture(id, 'k-cap').expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(captured.text);
    // Another body under the key (an amount, or another order): 422, nothing runs.
    expect((await capture(id, 'k-cap', { amountMinor: 100 }).expect(422)).body.code).toBe('idempotency_key_reused');
    const other = await authorizedOrder('k-create-2');
    expect((await capture(other, 'k-cap').expect(422)).body.code).toBe('idempotency_key_reused');
    expect(await orderDoc(other)).toMatchObject({ state: 'authorized', pendingAction: null });
    expect(app.gateway.operationCalls.capture).toBe(1);
  });

  it('captures part of the authorization; more than authorized is 422 with nothing written', async () => {
    const id = await authorizedOrder();
    const tooMuch = await capture(id, 'k-cap-much', { amountMinor: AMOUNT + 1 }).expect(422);
    expect(tooMuch.body).toMatchObject({ code: 'capture_exceeds_authorized', authorizedMinor: AMOUNT, newKeySafe: true });
    expectDocumented(tooMuch, '/v1/orders/{id}/capture');
    expect(await records('orders.capture')).toEqual([]);
    expect(await orderDoc(id)).toMatchObject({ state: 'authorized', pendingAction: null });
    expect(app.gateway.operationCalls.capture).toBe(0);
    expect((await capture(id, 'k-cap-zero', { amountMinor: 0 }).expect(400)).body.code).toBe('validation_failed');

    const partial = await capture(id, 'k-cap-part', { amountMinor: 1000 }).expect(200);
    expect(partial.body).toMatchObject({ state: 'captured', authorizedMinor: AMOUNT, capturedMinor: 1000 });
    expect(await orderDoc(id)).toMatchObject({ capturedMinor: 1000, refundableMinor: 1000 });
    await expectJournal(id, 1000);
    expect(await t.simulatorDb.collection('charges').findOne({ _id: `charge:${id}` as never })).toMatchObject({
      status: 'captured',
      capturedMinor: 1000,
    });
  });

  // Issue 32 item 6 (security review SEC4-03): an explicit null, or a body that is no object, is bad input, never "the
  // whole authorization" - which only an empty body (none, or {}) means. Sent as raw JSON text, as a client bug sends it.
  it('a null amount or a non-object body is 400 problem+json with nothing written; an empty body stays the full capture', async () => {
    const id = await authorizedOrder();
    const raw = (key: string, text: string) =>
      t.http().post(`/v1/orders/${id}/capture`).set(auth()).set('Idempotency-Key', key).set('Content-Type', 'application/json').send(text);
    const bad = ['null', '{"amountMinor":null}', '[]', '[{"amountMinor":1000}]', '"s"', '1', 'true', '{"amountMinor":"1000"}'];
    for (const [index, text] of bad.entries()) {
      const res = await raw(`k-cap-bad-${index}`, text);
      expect([text, res.status, res.body.code]).toEqual([text, 400, 'validation_failed']);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expectDocumented(res, '/v1/orders/{id}/capture');
    }
    expect(await records('orders.capture')).toEqual([]);
    expect(await orderDoc(id)).toMatchObject({ state: 'authorized', capturedMinor: 0, pendingAction: null });
    expect(app.gateway.operationCalls.capture).toBe(0);
    expect(await providerOps('capture')).toEqual([]);
    await expectJournal(id, 0);

    // No body at all: the documented full capture.
    const full = await t.http().post(`/v1/orders/${id}/capture`).set(auth()).set('Idempotency-Key', 'k-cap-empty').send();
    expect([full.status, full.body.capturedMinor]).toEqual([200, AMOUNT]);
    await expectJournal(id, AMOUNT);
    // And {} on another authorization.
    const other = await authorizedOrder('k-create-empty-object');
    const whole = await capture(other, 'k-cap-empty-object', {}).expect(200);
    expect(whole.body).toMatchObject({ state: 'captured', capturedMinor: AMOUNT });
  });

  it('captures once: a second capture with another key is refused (409) and the provider captured once', async () => {
    const id = await authorizedOrder();
    await capture(id, 'k-cap-1').expect(200);
    const second = await capture(id, 'k-cap-2').expect(409);
    expect(second.body).toMatchObject({ code: 'order_not_capturable', state: 'captured' });
    expectDocumented(second, '/v1/orders/{id}/capture');
    expect(await records('orders.capture')).toHaveLength(1);
    expect(await providerOps('capture')).toHaveLength(1);
    await expectJournal(id, AMOUNT);
  });

  it('409 while the capture is in flight (same key, and a void with another key), then it finishes once', async () => {
    const id = await authorizedOrder();
    const hold = app.gateway.holdNextOperation('capture');
    const first = capture(id, 'k-cap-held').then((res) => res);
    await hold.reached;
    const duplicate = await capture(id, 'k-cap-held').expect(409);
    expect(duplicate.body.code).toBe('idempotency_key_in_use');
    expect(duplicate.headers['retry-after']).toBeDefined();
    const rival = await voidOrder(id, 'k-void-rival').expect(409);
    expect(rival.body).toMatchObject({ code: 'order_not_voidable', state: 'authorized' });
    expect(rival.body.detail).toContain('in progress');
    hold.release();
    expect((await first).status).toBe(200);
    expect(await orderDoc(id)).toMatchObject({ state: 'captured', pendingAction: null });
    expect(await providerOps()).toHaveLength(1);
    expect(app.gateway.operationCalls.void).toBe(0);
  });

  it('503 when the provider is down: nothing stored, the retry with the same key captures once', async () => {
    const id = await authorizedOrder();
    app.gateway.failNextOperations('capture', 1);
    const down = await capture(id, 'k-cap-503').expect(503);
    expect(down.body.code).toBe('payment_provider_unavailable');
    expect(down.headers['retry-after']).toBeDefined();
    expect(await records('orders.capture')).toEqual([expect.objectContaining({ status: 'pending', response: null })]);
    expect(await orderDoc(id)).toMatchObject({ state: 'authorized', pendingAction: expect.objectContaining({ kind: 'capture' }) });
    const retry = await capture(id, 'k-cap-503').expect(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.body.state).toBe('captured');
    expect(app.gateway.operationCalls.capture).toBe(2);
    expect(await providerOps('capture')).toHaveLength(1);
    await expectJournal(id, AMOUNT);
  });

  it('voids: order voided, payment voided, provider authorization voided, no journal, order.voided event; then nothing more', async () => {
    const id = await authorizedOrder();
    const voided = await voidOrder(id, 'k-void').expect(200);
    expect(voided.body).toMatchObject({ id, state: 'voided', capturedMinor: 0 });
    expectDocumented(voided, '/v1/orders/{id}/void');
    expect(await orderDoc(id)).toMatchObject({ state: 'voided', pendingAction: null });
    expect(await paymentDoc(id)).toMatchObject({ status: 'voided' });
    expect(await t.simulatorDb.collection('charges').findOne({ _id: `charge:${id}` as never })).toMatchObject({ status: 'voided' });
    await expectJournal(id, 0);
    expect((await events(id)).map((event) => event.type)).toEqual(['order.voided']);
    expect((await voidOrder(id, 'k-void').expect(200)).text).toBe(voided.text);

    const captureAfter = await capture(id, 'k-cap-after-void').expect(409);
    expect(captureAfter.body).toMatchObject({ code: 'order_not_capturable', state: 'voided' });
    expect((await voidOrder(id, 'k-void-again').expect(409)).body.code).toBe('order_not_voidable');
    expect(await providerOps()).toHaveLength(1);
  });

  it('a void after the capture is refused, nothing written', async () => {
    const id = await authorizedOrder();
    await capture(id, 'k-cap').expect(200);
    const refused = await voidOrder(id, 'k-void-late').expect(409);
    expect(refused.body).toMatchObject({ code: 'order_not_voidable', state: 'captured' });
    expectDocumented(refused, '/v1/orders/{id}/void');
    expect(await records('orders.void')).toEqual([]);
    expect(await orderDoc(id)).toMatchObject({ state: 'captured' });
    // An automatic order was never authorized: nothing to capture or void.
    const automatic = await app.post('k-auto').expect(201);
    expect((await capture(automatic.body.id, 'k-cap-auto').expect(409)).body).toMatchObject({
      code: 'order_not_capturable',
      state: 'saved',
    });
    expect((await voidOrder(automatic.body.id, 'k-void-auto').expect(409)).body.code).toBe('order_not_voidable');
    // Another tenant's order, or no order: 404.
    expect((await capture(id, 'k-other', {}).set(auth('globex')).expect(404)).body.code).toBe('order_not_found');
    expect((await voidOrder('ord_000000000000000000000000', 'k-none').expect(404)).body.code).toBe('order_not_found');
  });

  it('an authorization that lapsed: capture answers authorization_expired (stored) and the order is expired', async () => {
    const id = await authorizedOrder('k-create', 'tok_auth_expires');
    const expired = await capture(id, 'k-cap-expired').expect(422);
    expect(expired.body).toMatchObject({ code: 'authorization_expired', orderId: id });
    expectDocumented(expired, '/v1/orders/{id}/capture');
    expect(await orderDoc(id)).toMatchObject({ state: 'expired', pendingAction: null });
    expect(await paymentDoc(id)).toMatchObject({ status: 'expired' });
    await expectJournal(id, 0);
    expect((await events(id)).map((event) => event.type)).toEqual(['order.expired']);
    const replay = await capture(id, 'k-cap-expired').expect(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(expired.text);
    expect(app.gateway.operationCalls.capture).toBe(1);
  });

  it('the expiry sweep voids an authorization past its time, and marks expired one the provider let lapse; once', async () => {
    const live = await authorizedOrder('k-live');
    const lapsing = await authorizedOrder('k-lapsing');
    const lapsed = await authorizedOrder('k-lapsed', 'tok_auth_expires');
    // Our clock says `lapsing` is due (the provider would still hold it): the sweep voids it.
    await t.db.collection('orders').updateOne({ _id: lapsing as never }, { $set: { authorizationExpiresAt: new Date(Date.now() - 1000) } });
    const run = await sweep.runOnce();
    expect(run).toMatchObject({ examined: 2, voided: 1, expired: 1, lost: 0, error: 0 });
    expect(await orderDoc(live)).toMatchObject({ state: 'authorized' });
    expect(await orderDoc(lapsing)).toMatchObject({ state: 'voided' });
    expect(await paymentDoc(lapsing)).toMatchObject({ status: 'voided' });
    expect(await orderDoc(lapsed)).toMatchObject({ state: 'expired' });
    expect(await t.simulatorDb.collection('operations').findOne({ _id: expiryVoidKeyFor(lapsing) as never })).toMatchObject({
      status: 'succeeded',
      kind: 'void',
    });
    expect((await events(lapsing)).map((event) => event.type)).toEqual(['order.voided']);
    expect((await events(lapsed)).map((event) => event.type)).toEqual(['order.expired']);
    expect(await sweep.runOnce()).toMatchObject({ examined: 0 });
    expect(await providerOps()).toHaveLength(2);
    const metrics = await t.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/authorization_expiry_sweep_total\{outcome="voided"\} 1/);
  });

  it('the sweep leaves alone an order a capture holds (its retry finishes it)', async () => {
    const id = await authorizedOrder();
    await t.db.collection('orders').updateOne({ _id: id as never }, { $set: { authorizationExpiresAt: new Date(Date.now() - 1000) } });
    app.gateway.failNextOperations('capture', 1);
    await capture(id, 'k-cap-held').expect(503);
    // The capture holds the order (its retry will resume it): the sweep does not look at it.
    expect(await sweep.runOnce()).toMatchObject({ examined: 0 });
    const retried = await capture(id, 'k-cap-held').expect(200);
    expect(retried.body.state).toBe('captured');
    expect(await sweep.runOnce()).toMatchObject({ examined: 0 });
  });

  for (const kind of ['capture', 'void'] as const) {
    const act = (id: string, key: string) => (kind === 'capture' ? capture(id, key) : voidOrder(id, key));
    const done = kind === 'capture' ? 'captured' : 'voided';
    const captured = kind === 'capture' ? AMOUNT : 0;

    for (const point of [`after-${kind}-claim`, `after-${kind}-provider`] as FaultPoint[]) {
      it(`crash at ${point}, resumed by the retry: ${done} once, one provider operation per key`, async () => {
        const id = await authorizedOrder();
        app.faults.crashOnceAt(point);
        await act(id, `k-${point}`).expect(500);
        expect(app.faults.consumeFired()).toBe(true);
        expect(await orderDoc(id)).toMatchObject({ state: 'authorized', pendingAction: expect.objectContaining({ kind }) });
        await app.expireLeases();
        const resumed = await act(id, `k-${point}`).expect(200);
        expect(resumed.body.state).toBe(done);
        expect(await orderDoc(id)).toMatchObject({ state: done, pendingAction: null });
        expect(await providerOps(kind)).toHaveLength(1);
        await expectOneOperationPerKey();
        await expectJournal(id, captured);
        expect((await act(id, `k-${point}`).expect(200)).text).toBe(resumed.text);
      });

      it(`crash at ${point}, reconciled by the reaper: never acts at the provider from there`, async () => {
        const id = await authorizedOrder();
        app.faults.crashOnceAt(point);
        await act(id, `k-${point}`).expect(500);
        await app.expireLeases();
        const run = await app.reaper.runOnce();
        const record = (await records(`orders.${kind}`))[0];
        expect(app.gateway.operationLookups).toBe(1);
        expect(app.gateway.operationCalls[kind]).toBe(point.endsWith('claim') ? 0 : 1);
        if (point.endsWith('provider')) {
          // The provider acted under the key: the reaper finishes the operation; the client's retry is replayed.
          expect(run).toMatchObject({ examined: 1, completed: 1 });
          expect(record).toMatchObject({ status: 'complete' });
          expect(await orderDoc(id)).toMatchObject({ state: done, pendingAction: null });
          const replay = await act(id, `k-${point}`).expect(200);
          expect(replay.headers['idempotent-replayed']).toBe('true');
        } else {
          // Nothing was done under the key: canceled there, the order let go, the record failed without a response...
          expect(run).toMatchObject({ examined: 1, abandoned: 1 });
          expect(record).toMatchObject({ status: 'failed', response: null });
          expect(await orderDoc(id)).toMatchObject({ state: 'authorized', pendingAction: null });
          expect(await providerOps()).toEqual([expect.objectContaining({ status: 'canceled' })]);
          // ...so the retry is a new attempt with a new provider key, which acts once.
          const retry = await act(id, `k-${point}`).expect(200);
          expect(retry.headers['idempotent-replayed']).toBeUndefined();
          expect((await records(`orders.${kind}`))[0]).toMatchObject({ status: 'complete', attempt: 2 });
        }
        expect(await orderDoc(id)).toMatchObject({ state: done });
        expect(await providerOps(kind)).toHaveLength(1);
        await expectOneOperationPerKey();
        await expectJournal(id, captured);
      });
    }
  }

  it('the provider acted and the worker died before recording it: the reaper finishes the capture', async () => {
    const id = await authorizedOrder();
    app.gateway.crashAfterNextOperation('capture');
    await capture(id, 'k-cap-dies').expect(500);
    await app.expireLeases();
    expect(await app.reaper.runOnce()).toMatchObject({ completed: 1 });
    expect(await orderDoc(id)).toMatchObject({ state: 'captured' });
    await expectJournal(id, AMOUNT);
    expect(await providerOps('capture')).toHaveLength(1);
  });

  it('the provider refused and the worker died before recording it: the reaper stores the refusal (expired order), the retry replays it', async () => {
    const id = await authorizedOrder('k-create', 'tok_auth_expires');
    app.faults.crashOnceAt('after-capture-provider');
    await capture(id, 'k-cap-refused').expect(500);
    await app.expireLeases();
    expect(await app.reaper.runOnce()).toMatchObject({ completed: 1 });
    expect(await orderDoc(id)).toMatchObject({ state: 'expired', pendingAction: null });
    expect((await records('orders.capture'))[0]).toMatchObject({ status: 'failed', response: expect.objectContaining({ status: 422 }) });
    const replay = await capture(id, 'k-cap-refused').expect(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.code).toBe('authorization_expired');
    expect(await providerOps('capture')).toEqual([expect.objectContaining({ status: 'refused', reason: 'authorization_expired' })]);
  });

  it('a capture and a void racing with different keys: exactly one wins, the other is refused with nothing written', async () => {
    for (let round = 0; round < 4; round++) {
      const id = await authorizedOrder(`k-create-${round}`);
      const [captured, voided] = await Promise.all([capture(id, `k-race-cap-${round}`), voidOrder(id, `k-race-void-${round}`)]);
      const statuses = [captured.status, voided.status].sort();
      expect(statuses).toEqual([200, 409]);
      const order = await orderDoc(id);
      expect(order!.state).toBe(captured.status === 200 ? 'captured' : 'voided');
      expect(order!.pendingAction).toBeNull();
      await expectJournal(id, captured.status === 200 ? AMOUNT : 0);
    }
    const ops = await providerOps();
    expect(ops).toHaveLength(4);
    expect(ops.every((op) => op.status === 'succeeded')).toBe(true);
  });

  it('the manual-capture checker does flag books that disagree with the provider', async () => {
    const id = await authorizedOrder();
    await capture(id, 'k-cap').expect(200);
    const lines = await entries(id);
    await t.db.collection('ledger_entries').deleteMany({ orderId: id });
    await t.db.collection('orders').updateOne({ _id: id as never }, { $set: { capturedMinor: AMOUNT + 1 } });
    const violations = await manualCaptureViolations(t.db, t.simulatorDb);
    expect(violations.join('\n')).toMatch(/journal \[\]/);
    expect(violations.join('\n')).toMatch(/out of order/);
    expect(violations.join('\n')).toMatch(/the provider captured 2500/);
    await t.db.collection('ledger_entries').insertMany(lines);
    await t.db.collection('orders').updateOne({ _id: id as never }, { $set: { capturedMinor: AMOUNT } });
  });

  it('voidByKey: the void without HTTP under its own key, replayed by key', async () => {
    const id = await authorizedOrder();
    const actions = t.app.get(CaptureVoidService);
    const first = await actions.voidByKey('acme', id, 'cancel:k-create');
    expect(first.replayed).toBe(false);
    expect(first.response.status).toBe(200);
    expect(JSON.parse(first.response.body)).toMatchObject({ id, state: 'voided' });
    const again = await actions.voidByKey('acme', id, 'cancel:k-create');
    expect(again).toMatchObject({ replayed: true });
    expect(again.response.body).toBe(first.response.body);
    // The same key space as the route: an HTTP void under that key is the same request.
    const http = await voidOrder(id, 'cancel:k-create').expect(200);
    expect(http.headers['idempotent-replayed']).toBe('true');
    expect(http.text).toBe(first.response.body);
    expect(await providerOps('void')).toHaveLength(1);
  });
});
