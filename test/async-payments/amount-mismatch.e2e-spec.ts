import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import type { SimulatedPaymentGateway } from '../../src/payment-simulator/simulated-payment.gateway.js';
import { chargeEvent } from '../../src/payment-simulator/webhook-events.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { deliver, effectsOf, eventFor, newWebhookSecret, SAVED_ONCE, UNTOUCHED } from '../support/webhooks.js';

/**
 * The rule (issue 33, defect (a)): a signed `charge.succeeded` whose amount
 * or currency is not the order's never saves the order - the provider and
 * our order disagree about the money, and that is left for a human
 * (`amount_mismatch`), never booked. The control beside it: the same
 * delivery with the order's own amount saves it, so the refusal is the
 * guard's and not a delivery that could never apply.
 */
describe('asynchronous settlement: a provider that reports another amount', () => {
  let t: TestApp;
  let gateway: SimulatedPaymentGateway;
  const secret = newWebhookSecret();
  let keySeq = 0;
  /** orderBody(): 2 x 1250. */
  const AMOUNT = 2500;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_amount_mismatch', env: { WEBHOOK_SECRETS: secret } });
    gateway = t.app.get(PaymentGateway) as SimulatedPaymentGateway;
  });
  beforeEach(async () => {
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
  });
  afterAll(async () => t.close());

  /** An asynchronous order the provider then settled as succeeded (its own charge: 2500 USD). */
  async function settledAtProvider(): Promise<{ orderId: string; chargeKey: string }> {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', `mismatch-${++keySeq}`)
      .send(orderBody({ paymentMethod: { token: 'tok_async' } }))
      .expect(202);
    const chargeKey = chargeKeyFor(res.body.id);
    await gateway.settleProcessing(chargeKey, 'succeeded');
    return { orderId: res.body.id, chargeKey };
  }

  /** The provider's own charge.succeeded, signed, but saying `facts` about the money. */
  async function succeededSaying(chargeKey: string, facts: { amountMinor?: number; currency?: string }) {
    const real = await eventFor(t.simulatorDb, chargeKey, 'charge.succeeded');
    const data = real.data as { chargeKey: string; chargeId: string; amountMinor: number; currency: string };
    return chargeEvent('charge.succeeded', { ...data, ...facts }, real.timestamp);
  }

  it.each([
    ['one minor unit more', { amountMinor: AMOUNT + 1 }],
    ['one minor unit less', { amountMinor: AMOUNT - 1 }],
    ['the same number in another currency', { currency: 'EUR' }],
  ])('does not save the order for a signed charge.succeeded of %s: ignored as amount_mismatch, nothing booked', async (_what, facts) => {
    const { orderId, chargeKey } = await settledAtProvider();
    const event = await succeededSaying(chargeKey, facts);
    const res = await deliver(t, secret, event).expect(200);
    expect(res.body).toEqual({ eventId: event.id, duplicate: false, outcome: 'ignored', reason: 'amount_mismatch', orderId });
    expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
    const inbox = await t.db.collection('webhook_inbox').find({}).toArray();
    expect(inbox.map((row) => [row._id, row.outcome, row.reason])).toEqual([[event.id, 'ignored', 'amount_mismatch']]);
    const order = await t.http().get(`/v1/orders/${orderId}`).set(auth()).expect(200);
    expect(order.body).toMatchObject({ state: 'processing', paymentId: null, capturedMinor: 0 });
    // A copy of it later is the same duplicate, still changing nothing.
    const again = await deliver(t, secret, event).expect(200);
    expect(again.body).toMatchObject({ duplicate: true, outcome: 'ignored', reason: 'amount_mismatch' });
    expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
    expect(await findViolations({ ...t })).toEqual([]);
  });

  it('control: the same signed delivery with the order amount and currency saves it once', async () => {
    const { orderId, chargeKey } = await settledAtProvider();
    const event = await succeededSaying(chargeKey, { amountMinor: AMOUNT, currency: 'USD' });
    const res = await deliver(t, secret, event).expect(200);
    expect(res.body).toMatchObject({ outcome: 'applied', reason: null, orderId });
    expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [orderId], requireSettled: true })).toEqual([]);
  });
});
