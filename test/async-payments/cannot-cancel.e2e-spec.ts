import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import type { SimulatedPaymentGateway } from '../../src/payment-simulator/simulated-payment.gateway.js';
import { ProcessingReconciler } from '../../src/async-payments/processing-reconciler.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const PROCESSING_BOUND_MS = 1000;
const BANK_TRANSFER_BOUND_MS = 3000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A charge the provider cannot cancel while it is processing (a bank
 * transfer, tok_bank_transfer): past the processing bound the provider
 * answers `still_processing`, and the order stays `processing` - never
 * failed while its money may still arrive. Its bound is extended to the
 * method's (PROCESSING_BOUND_BANK_TRANSFER_MS); past that it is counted
 * (`processing_orders_reconciled_total{result="past_bound"}`, alert
 * ProcessingPastBoundUncancelable) and asked again later. A cancel by key
 * meets the same answer: a retryable 409 cancel_in_progress, the key held,
 * and once the provider settles the payment the same cancel refunds it.
 */
describe('asynchronous charges the provider cannot cancel', () => {
  let t: TestApp;
  let gateway: SimulatedPaymentGateway;
  let reconciler: ProcessingReconciler;
  let seq = 0;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_async_cannot_cancel',
      env: { PROCESSING_BOUND_MS: String(PROCESSING_BOUND_MS), PROCESSING_BOUND_BANK_TRANSFER_MS: String(BANK_TRANSFER_BOUND_MS) },
    });
    gateway = t.app.get(PaymentGateway) as SimulatedPaymentGateway;
    reconciler = t.app.get(ProcessingReconciler);
  });
  beforeEach(() => t.reset());
  afterAll(async () => t.close());

  const create = async (key: string, token = 'tok_bank_transfer') => {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ paymentMethod: { token } }))
      .expect(202);
    expect(res.body.state).toBe('processing');
    return res.body.id as string;
  };
  const orderOf = (id: string) => t.db.collection('orders').findOne({ _id: id as never });
  const chargeOf = (id: string) => t.simulatorDb.collection('charges').findOne({ _id: chargeKeyFor(id) as never });
  const reconciled = async (result: string) =>
    (await t.app.get(MetricsService).registry.getSingleMetricAsString('processing_orders_reconciled_total'))
      .split('\n')
      .find((line) => line.includes(`result="${result}"`));

  it('past the processing bound: still processing at the provider, the order kept processing, its bound extended to the method', async () => {
    const id = await create(`bank-${++seq}`);
    await sleep(PROCESSING_BOUND_MS + 100);
    expect(await reconciler.runOnce()).toMatchObject({ examined: 1, still_processing: 1, canceled: 0 });
    const order = await orderOf(id);
    expect(order).toMatchObject({ state: 'processing', failureReason: null, paymentId: null });
    const since = (order!.stateHistory as { processing: Date }).processing.getTime();
    expect((order!.processingCheckAfter as Date).getTime()).toBe(since + BANK_TRANSFER_BOUND_MS);
    expect(await chargeOf(id)).toMatchObject({ status: 'processing' });
    // Until the method's bound, the order is not asked about again (nor does it hold up the others).
    expect(await reconciler.runOnce()).toMatchObject({ examined: 0 });

    // Past the method's bound and still uncancelable: counted (the alert's metric), rechecked later, never failed.
    await sleep(since + BANK_TRANSFER_BOUND_MS + 100 - Date.now());
    expect(await reconciler.runOnce()).toMatchObject({ examined: 1, past_bound: 1 });
    expect(await orderOf(id)).toMatchObject({ state: 'processing', processingCheckAfter: expect.any(Date) });
    expect(((await orderOf(id))!.processingCheckAfter as Date).getTime()).toBeGreaterThan(Date.now() + 60_000);
    expect(await reconciled('past_bound')).toMatch(/ 1$/);
    expect(await reconciler.runOnce()).toMatchObject({ examined: 0 });

    // When the money arrives the order is saved as usual.
    expect(await gateway.settleProcessing(chargeKeyFor(id), 'succeeded')).toBe('succeeded');
    await t.db.collection('orders').updateOne({ _id: id as never }, { $set: { processingCheckAfter: new Date(0) } });
    expect(await reconciler.runOnce()).toMatchObject({ examined: 1, succeeded: 1 });
    expect(await orderOf(id)).toMatchObject({ state: 'saved', capturedMinor: 2500 });
    expect(await t.db.collection('ledger_entries').countDocuments({ orderId: id })).toBeGreaterThan(0);
  });

  it('a cancelable asynchronous charge (tok_async) is still canceled past the bound: the per-method rule changes nothing else', async () => {
    const id = await create(`async-${++seq}`, 'tok_async');
    await sleep(PROCESSING_BOUND_MS + 100);
    expect(await reconciler.runOnce()).toMatchObject({ examined: 1, canceled: 1 });
    expect(await orderOf(id)).toMatchObject({ state: 'failed', failureReason: 'processing_expired' });
    expect(await chargeOf(id)).toMatchObject({ status: 'canceled' });
  });

  it('cancel by key of a bank transfer still processing: a retryable 409 cancel_in_progress, the order and the charge untouched, the key held; once settled, the same cancel refunds it', async () => {
    const key = `bank-cancel-${++seq}`;
    const id = await create(key);
    const res = await t.http().post(`/v1/idempotency-keys/${key}/cancel`).set(auth());
    expect([res.status, res.body.code, res.body.retryable]).toEqual([409, 'cancel_in_progress', true]);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await orderOf(id)).toMatchObject({ state: 'processing', failureReason: null });
    expect(await chargeOf(id)).toMatchObject({ status: 'processing' });
    expect(await t.db.collection('payments').countDocuments()).toBe(0);
    expect(await t.db.collection('ledger_entries').countDocuments()).toBe(0);
    // The key refuses new requests meanwhile; nothing was created under it.
    const again = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ paymentMethod: { token: 'tok_bank_transfer' } }));
    expect(again.status).toBe(409);
    expect(await t.db.collection('orders').countDocuments()).toBe(1);

    // The transfer arrives: the repeat of the same cancel now undoes final money - the whole amount refunded, once.
    expect(await gateway.settleProcessing(chargeKeyFor(id), 'succeeded')).toBe('succeeded');
    const repeat = await t.http().post(`/v1/idempotency-keys/${key}/cancel`).set(auth());
    expect([repeat.status, repeat.body.outcome]).toEqual([200, 'refunded']);
    expect(await orderOf(id)).toMatchObject({ state: 'refunded', capturedMinor: 2500, refundedMinor: 2500, refundableMinor: 0 });
    expect(await t.db.collection('refunds').countDocuments({ orderId: id, state: 'succeeded', amountMinor: 2500 })).toBe(1);
  });

  it('a cancel repeated past the bound leaves the reconciliation its schedule: the order is still examined and counted past_bound (each repeat pushed its next look an hour out, so the alert never fired)', async () => {
    const key = `bank-repeat-${++seq}`;
    const id = await create(key);
    await sleep(BANK_TRANSFER_BOUND_MS + 100);
    for (let i = 0; i < 3; i += 1) {
      const res = await t.http().post(`/v1/idempotency-keys/${key}/cancel`).set(auth());
      expect([res.status, res.body.code]).toEqual([409, 'cancel_in_progress']);
    }
    expect(await orderOf(id)).toMatchObject({ state: 'processing' });
    expect(await reconciler.runOnce()).toMatchObject({ examined: 1, past_bound: 1 });
    expect(((await orderOf(id))!.processingCheckAfter as Date).getTime()).toBeGreaterThan(Date.now() + 60_000);
    expect(await chargeOf(id)).toMatchObject({ status: 'processing' });
  });
});
