import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { ProviderEvent } from '../../src/payment-simulator/webhook-sender.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { deliver, newWebhookSecret } from '../support/webhooks.js';

/**
 * `refund.failed` at the provider-neutral door (POST /v1/webhooks/payments):
 * the port's word for a refund a provider answered succeeded and failed
 * afterwards. The simulator's own refunds are final at once (it never fails
 * one late), so this is the event any provider behind the port sends - here
 * signed by the test as a provider would - and it books the same as
 * Stripe's refund.failed (test/payment-stripe/stripe-refund-failed-late).
 */
describe('provider webhooks: refund.failed', () => {
  let t: TestApp;
  const secret = newWebhookSecret();
  let seq = 0;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_webhooks_refund_failed', env: { WEBHOOK_SECRETS: secret } });
  });
  beforeEach(async () => {
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
  });
  afterAll(async () => t.close());

  async function refundedOrder(amountMinor: number) {
    seq += 1;
    const order = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `rf-order-${seq}`).send(orderBody()).expect(201);
    const refund = await t
      .http()
      .post(`/v1/orders/${order.body.id}/refunds`)
      .set(auth())
      .set('Idempotency-Key', `rf-refund-${seq}`)
      .send({ amountMinor, reason: 'requested_by_customer' })
      .expect(201);
    return {
      orderId: order.body.id as string,
      refundId: refund.body.id as string,
      providerRefundId: refund.body.providerRefundId as string,
    };
  }
  const failedEvent = (refundId: string, providerRefundId: string, amountMinor: number, id = `evt_${refundId}_failed`): ProviderEvent => ({
    id,
    type: 'refund.failed',
    timestamp: new Date(),
    data: { refundKey: `refund:${refundId}`, providerRefundId, amountMinor, currency: 'USD', failureReason: 'expired_or_canceled_card' },
  });

  it('books the failure once: refund failed, order refundable again, compensating journal, order.refund_failed', async () => {
    const { orderId, refundId, providerRefundId } = await refundedOrder(1000);
    const event = failedEvent(refundId, providerRefundId, 1000);
    expect((await deliver(t, secret, event).expect(200)).body).toEqual({
      eventId: event.id,
      duplicate: false,
      outcome: 'applied',
      reason: null,
      orderId,
    });
    expect((await deliver(t, secret, event).expect(200)).body).toMatchObject({ duplicate: true });
    // Another event about the same failure (another id): the refund is failed already.
    const again = failedEvent(refundId, providerRefundId, 1000, 'evt_same_failure_again');
    expect((await deliver(t, secret, again).expect(200)).body).toMatchObject({ outcome: 'ignored', reason: 'already_failed' });

    expect(await t.db.collection('refunds').findOne({ _id: refundId as never })).toMatchObject({
      state: 'failed',
      failureReason: 'failed_at_provider',
    });
    expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({
      state: 'saved',
      refundedMinor: 0,
      refundableMinor: 2500,
    });
    const lines = await t.db.collection('ledger_entries').find({ orderId }).toArray();
    const sum = (direction: string) => lines.filter((l) => l.direction === direction).reduce((a, l) => a + l.amountMinor, 0);
    expect(sum('debit')).toBe(sum('credit'));
    expect(lines.filter((l) => l.journalId === `jrn_${refundId}_failed`)).toHaveLength(4);
    expect(await t.db.collection('outbox_events').countDocuments({ aggregateId: orderId, type: 'order.refund_failed' })).toBe(1);
    const view = await t.http().get(`/v1/orders/${orderId}/refunds/${refundId}`).set(auth()).expect(200);
    expect(view.body).toMatchObject({ state: 'failed', failureReason: 'failed_at_provider' });
  });

  it('a failure of a refund still pending here is not ready (503, nothing recorded): the provider delivers again', async () => {
    const { orderId, refundId, providerRefundId } = await refundedOrder(500);
    // The refund's request has not recorded the provider's answer yet (its worker stalled after the provider call).
    await t.db.collection('refunds').updateOne({ _id: refundId as never }, { $set: { state: 'pending' } });
    const event = failedEvent(refundId, providerRefundId, 500);
    await deliver(t, secret, event).expect(503);
    expect(await t.db.collection('webhook_inbox').countDocuments({ _id: event.id as never })).toBe(0);
    expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({ refundedMinor: 500 });
  });

  it('an unknown refund is acknowledged and changes nothing; a malformed one is 400 and writes nothing', async () => {
    const unknown = failedEvent('re_0123456789abcdef01234567', 're_sim_unknown', 100);
    expect((await deliver(t, secret, unknown).expect(200)).body).toMatchObject({
      outcome: 'ignored',
      reason: 'unknown_refund',
      orderId: null,
    });
    const malformed: ProviderEvent = { ...unknown, id: 'evt_malformed_refund', data: { ...unknown.data, refundKey: 'charge:ord_x' } };
    await deliver(t, secret, malformed).expect(400);
    expect(await t.db.collection('webhook_inbox').countDocuments({ _id: 'evt_malformed_refund' as never })).toBe(0);
  });
});
