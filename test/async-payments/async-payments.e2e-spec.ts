import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { AddressInfo } from 'node:net';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { SimulatedWebhookSender } from '../../src/payment-simulator/webhook-sender.js';
import { ProcessingReconciler } from '../../src/async-payments/processing-reconciler.js';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { effectsOf, newWebhookSecret, SAVED_ONCE, UNTOUCHED } from '../support/webhooks.js';

// Long enough for a test's setup (two creates, a settle, a drain) to finish inside it even in the
// conflict pass, where injected write conflicts retry transactions on a loaded emulator: at 1 s the
// first order passed its bound before the "within the bound" check there (CI, 2026-12-05).
const PROCESSING_BOUND_MS = 3000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Asynchronous payments end to end: the create answers 202 and replays it;
 * the simulated provider settles later and tells the service by webhook,
 * over real HTTP, at least once (delays, duplicates, reordering, retries
 * with backoff, a rotating secret, loss); and when no webhook ever comes,
 * the processing reconciliation asks the provider once the bound has passed.
 */
describe('asynchronous payments', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  let sender: SimulatedWebhookSender;
  let reconciler: ProcessingReconciler;
  let url: string;
  const secret = newWebhookSecret();
  let keySeq = 0;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_async_payments',
      env: { WEBHOOK_SECRETS: secret, PROCESSING_BOUND_MS: String(PROCESSING_BOUND_MS) },
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    await t.app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/v1/webhooks/payments`;
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
    sender = t.app.get(SimulatedWebhookSender);
    reconciler = t.app.get(ProcessingReconciler);
  });
  beforeEach(async () => {
    await sender.drain();
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
    gateway.reset();
    sender.configure({ url, secrets: [secret], delayMs: 0, jitterMs: 0, duplicateRate: 0, lossRate: 0, maxAttempts: 8, backoffMs: 20 });
    sender.useRandom(Math.random);
    sender.resetStats();
  });
  afterAll(async () => {
    await sender.drain();
    await t.close();
  });

  const create = (key: string, token = 'tok_async') =>
    t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ paymentMethod: { token } }));

  async function asyncOrder(): Promise<string> {
    return (await create(`async-${++keySeq}`).expect(202)).body.id;
  }

  const settle = (orderId: string, outcome: 'succeeded' | 'declined') => gateway.settleProcessing(chargeKeyFor(orderId), outcome);
  const inboxOf = (orderId: string) => t.db.collection('webhook_inbox').find({ orderId }).toArray();

  it('answers 202 with Location for an asynchronous method, and a retry of the key replays that 202', async () => {
    const key = `async-${++keySeq}`;
    const first = await create(key).expect(202);
    expect(first.headers.location).toBe(`/v1/orders/${first.body.id}`);
    expect(first.body).toMatchObject({ state: 'processing', paymentId: null, amountMinor: 2500 });
    const replay = await create(key).expect(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers.location).toBe(first.headers.location);
    expect(replay.text).toBe(first.text);
    expect(await effectsOf(t.db, first.body.id)).toEqual(UNTOUCHED);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ status: 'complete', recoveryPoint: 'processing' });
    expect(await t.simulatorDb.collection('charges').findOne({})).toMatchObject({ status: 'processing' });
    expect(gateway.calls).toBe(1);
    // The provider said `processing` by webhook too: recorded, nothing to change.
    await sender.drain();
    expect(await inboxOf(first.body.id)).toMatchObject([{ type: 'charge.processing', outcome: 'ignored', reason: 'no_change' }]);
  });

  it('moves the order to saved when the provider settles and its webhook arrives over HTTP; the key still replays the 202', async () => {
    const key = `async-${++keySeq}`;
    const orderId = (await create(key).expect(202)).body.id;
    expect(await settle(orderId, 'succeeded')).toBe('succeeded');
    await sender.drain();
    expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
    expect((await inboxOf(orderId)).map((row) => [row.type, row.outcome]).sort()).toEqual([
      ['charge.processing', 'ignored'],
      ['charge.succeeded', 'applied'],
    ]);
    const order = await t.http().get(`/v1/orders/${orderId}`).set(auth()).expect(200);
    expect(order.body.state).toBe('saved');
    expect((await create(key).expect(202)).body.state).toBe('processing');
    expect(sender.stats).toMatchObject({ delivered: 2, abandoned: 0 });
  });

  it('fails a declined asynchronous charge by webhook: no payment, no journal, no event', async () => {
    const orderId = await asyncOrder();
    await settle(orderId, 'declined');
    await sender.drain();
    expect(await effectsOf(t.db, orderId)).toEqual({ state: 'failed', payments: 0, ledgerLines: 0, balanced: true, completedEvents: 0 });
    expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({ failureReason: 'card_declined' });
  });

  it('applies each event once when the provider delivers every event twice and out of order', async () => {
    sender.configure({ duplicateRate: 1, jitterMs: 40 });
    const orderIds = [];
    for (let n = 0; n < 5; n++) orderIds.push(await asyncOrder());
    for (const orderId of orderIds) await settle(orderId, 'succeeded');
    await sender.drain();
    expect(sender.stats).toMatchObject({ events: 10, duplicates: 10, delivered: 20, abandoned: 0 });
    for (const orderId of orderIds) expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
    expect(await t.db.collection('webhook_inbox').countDocuments()).toBe(10);
    expect(await t.db.collection('webhook_inbox').countDocuments({ outcome: 'applied' })).toBe(5);
    expect(await findViolations({ ...t, acknowledgedOrderIds: orderIds, requireSettled: true })).toEqual([]);
  });

  it('retries with backoff while the service answers 503 (the outcome overtook its order), then applies it once', async () => {
    const held = gateway.holdNextCharge('after');
    const creating = create(`async-${++keySeq}`).then((res) => res);
    const orderId = await held.reached;
    await settle(orderId, 'succeeded');
    // The outcome's webhook meets a pending order: 503 + Retry-After, retried with backoff.
    while (!sender.stats.statuses['503']) await sleep(10);
    held.release();
    expect((await creating).status).toBe(202);
    await sender.drain();
    expect(sender.stats.statuses['503']).toBeGreaterThanOrEqual(1);
    expect(sender.stats).toMatchObject({ delivered: 2, abandoned: 0 });
    expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
  });

  it('keeps delivering through a secret roll (new and old signatures), and gives up on a secret the service does not know', async () => {
    sender.rotate([newWebhookSecret(), secret]);
    const rolled = await asyncOrder();
    await settle(rolled, 'succeeded');
    await sender.drain();
    expect(await effectsOf(t.db, rolled)).toEqual(SAVED_ONCE);

    sender.configure({ secrets: [newWebhookSecret()], maxAttempts: 3, backoffMs: 5 });
    const unknown = await asyncOrder();
    await settle(unknown, 'succeeded');
    await sender.drain();
    expect(sender.stats.statuses['401']).toBe(6);
    expect(sender.stats.abandoned).toBe(2);
    expect(await effectsOf(t.db, unknown)).toEqual(UNTOUCHED);
  });

  it('bounds processing when no webhook ever comes: past the bound the provider is asked, and a charge still processing is canceled', async () => {
    sender.configure({ lossRate: 1 });
    const settledThere = await asyncOrder();
    const stillProcessing = await asyncOrder();
    await settle(settledThere, 'succeeded');
    await sender.drain();
    expect(sender.stats).toMatchObject({ events: 3, lost: 3, attempts: 0 });
    // Within the bound: nothing to do yet.
    expect(await reconciler.runOnce()).toMatchObject({ examined: 0 });
    await sleep(PROCESSING_BOUND_MS + 100);
    expect(await reconciler.runOnce()).toMatchObject({ examined: 2, succeeded: 1, canceled: 1, error: 0 });
    expect(await effectsOf(t.db, settledThere)).toEqual(SAVED_ONCE);
    expect(await effectsOf(t.db, stillProcessing)).toMatchObject({ state: 'failed', payments: 0, ledgerLines: 0 });
    expect(await t.db.collection('orders').findOne({ _id: stillProcessing as never })).toMatchObject({
      failureReason: 'processing_expired',
    });
    // Canceled at the provider: it can never settle now, so no money moves behind the failed order.
    expect(await settle(stillProcessing, 'succeeded')).toBe('canceled');
    expect(await reconciler.runOnce()).toMatchObject({ examined: 0 });
    expect(await t.db.collection('orders').countDocuments({ state: 'processing' })).toBe(0);
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
  });

  it('reports a charge the provider settled while its webhook is late as in flight, not missing_in_ledger (it paged on a healthy order)', async () => {
    sender.configure({ lossRate: 1 });
    const orderId = await asyncOrder();
    await settle(orderId, 'succeeded');
    const settlement = t.app.get(SettlementReconciliation);
    const hour = { from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 3600_000) };
    const during = await settlement.run(hour.from, hour.to);
    expect(during.mismatches).toEqual([]);
    expect(during.inFlight).toEqual([
      expect.objectContaining({ orderId, reason: 'charge_in_flight', ledgerMinor: null, providerMinor: 2500 }),
    ]);
    // Nothing booked while the order waits: the webhook or the bound check settles it.
    expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({ state: 'processing' });
    expect(await t.db.collection('ledger_entries').countDocuments({ orderId })).toBe(0);
    sender.configure({ lossRate: 0 });
    await settle(orderId, 'succeeded');
    await sender.drain();
    expect(await settlement.run(hour.from, hour.to)).toMatchObject({ matched: 1, mismatches: [], inFlight: [] });
    expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
  });

  it('lets a late webhook after the reconciliation change nothing', async () => {
    sender.configure({ lossRate: 1 });
    const orderId = await asyncOrder();
    await settle(orderId, 'succeeded');
    await sleep(PROCESSING_BOUND_MS + 100);
    expect(await reconciler.runOnce()).toMatchObject({ succeeded: 1 });
    sender.configure({ lossRate: 0 });
    await settle(orderId, 'succeeded');
    await sender.drain();
    expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
    expect(await inboxOf(orderId)).toMatchObject([{ type: 'charge.succeeded', outcome: 'ignored', reason: 'already_final' }]);
  });
});

/** The simulator on its own (PAYMENT_SIMULATOR_ASYNC_SETTLE_MS): it settles a charge later and says so by webhook, as a provider does. */
describe('asynchronous payments settled by the simulator on its own', () => {
  let t: TestApp;
  let sender: SimulatedWebhookSender;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_async_self_settling', env: { WEBHOOK_SECRETS: secret, PAYMENT_SIMULATOR_ASYNC_SETTLE_MS: '200' } });
    await t.app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/v1/webhooks/payments`;
    sender = t.app.get(SimulatedWebhookSender);
    sender.configure({ url, secrets: [secret], delayMs: 0, jitterMs: 0, duplicateRate: 0, lossRate: 0, maxAttempts: 8, backoffMs: 20 });
  });
  afterAll(async () => {
    await sender.drain();
    await t.close();
  });

  async function finalState(orderId: string): Promise<string> {
    for (let waited = 0; waited < 10_000; waited += 50) {
      const { state } = (await t.http().get(`/v1/orders/${orderId}`).set(auth()).expect(200)).body as { state: string };
      if (state !== 'processing') return state;
      await sleep(50);
    }
    return 'processing';
  }

  it('tok_async ends saved once and tok_async_decline failed, each by the webhook the simulator sent', async () => {
    const created = async (key: string, token: string) =>
      (
        await t
          .http()
          .post('/v1/orders')
          .set(auth())
          .set('Idempotency-Key', key)
          .send(orderBody({ paymentMethod: { token } }))
          .expect(202)
      ).body.id as string;
    const paid = await created('self-settled', 'tok_async');
    const declined = await created('self-declined', 'tok_async_decline');
    expect(await finalState(paid)).toBe('saved');
    expect(await finalState(declined)).toBe('failed');
    await sender.drain();
    expect(await effectsOf(t.db, paid)).toEqual(SAVED_ONCE);
    expect(await t.db.collection('webhook_inbox').countDocuments({ orderId: paid, outcome: 'applied' })).toBe(1);
    expect(await t.db.collection('orders').findOne({ _id: declined as never })).toMatchObject({ failureReason: 'card_declined' });
    expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb })).toEqual([]);
  });
});
