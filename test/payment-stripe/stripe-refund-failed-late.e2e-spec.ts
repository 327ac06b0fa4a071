import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import { findViolations } from '../support/invariants.js';
import { exportBooks } from '../support/stripe-fake/provider-books.js';
import { StripeFake, type FakeEvent } from '../support/stripe-fake/stripe-fake.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const WEBHOOK_SECRET = 'whsec_fake0123456789abcdef';

/**
 * A Stripe refund answered `succeeded` that fails days later (the card was
 * closed: Stripe puts the money back on our balance and sends refund.failed,
 * charge.refund.updated and refund.updated). The books must follow the
 * money: the refund failed, a compensating journal, the order refundable
 * again, an `order.refund_failed` event - once, whatever the deliveries.
 */
describe('PAYMENT_PROVIDER=stripe: a refund that fails after it succeeded', () => {
  let t: TestApp;
  const fake = new StripeFake();

  beforeAll(async () => {
    await fake.start();
    fake.webhookSecret = WEBHOOK_SECRET;
    t = await startApp({
      dbName: 'test_stripe_refund_failed_late',
      env: {
        ...fake.serviceEnv(WEBHOOK_SECRET),
        STRIPE_MAX_NETWORK_RETRIES: '0',
      },
    });
    await t.reset();
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await t?.close();
    await fake.stop();
  });

  const deliver = (event: FakeEvent) => {
    const { payload, header } = fake.signed(event);
    return t.http().post('/v1/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', header).send(payload);
  };
  const paidOrder = async (key: string): Promise<string> =>
    (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody()).expect(201)).body.id;
  const refund = (orderId: string, key: string, amountMinor: number) =>
    t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', key)
      .send({ amountMinor, reason: 'requested_by_customer' });
  const order = (orderId: string) => t.db.collection('orders').findOne({ _id: orderId as never });
  const refundDoc = (refundId: string) => t.db.collection('refunds').findOne({ _id: refundId as never });
  /** Per account, debits minus credits of the order's journal lines; and whether the whole is balanced. */
  const books = async (orderId: string) => {
    const lines = await t.db.collection('ledger_entries').find({ orderId }).toArray();
    const net: Record<string, number> = {};
    for (const line of lines) net[line.account] = (net[line.account] ?? 0) + (line.direction === 'debit' ? 1 : -1) * line.amountMinor;
    return {
      net,
      balanced: Object.values(net).reduce((a, b) => a + b, 0) === 0,
      journals: [...new Set(lines.map((l) => l.journalId))].sort(),
    };
  };
  const outbox = (orderId: string, type: string) => t.db.collection('outbox_events').find({ aggregateId: orderId, type }).toArray();

  it('a full refund failing late: refund failed, order saved and refundable again, compensating journal, one order.refund_failed', async () => {
    const orderId = await paidOrder('late-fail-order-1');
    const refunded = await refund(orderId, 'late-fail-refund-1', 2500).expect(201);
    expect(await order(orderId)).toMatchObject({ state: 'refunded', refundedMinor: 2500, refundableMinor: 0 });
    const providerRefundId = (await refundDoc(refunded.body.id))!.providerRefundId as string;
    expect(fake.refunds.get(providerRefundId)?.metadata).toMatchObject({ refund_key: `refund:${refunded.body.id}` });

    const [failed, chargeRefundUpdated, refundUpdated] = fake.failRefund(providerRefundId);
    expect([failed.type, chargeRefundUpdated.type, refundUpdated.type]).toEqual([
      'refund.failed',
      'charge.refund.updated',
      'refund.updated',
    ]);

    // Out of order: refund.updated (status failed) arrives first and is the one applied.
    const applied = await deliver(refundUpdated).expect(200);
    expect(applied.body).toEqual({ eventId: refundUpdated.id, duplicate: false, outcome: 'applied', reason: null, orderId });
    expect((await deliver(failed).expect(200)).body).toMatchObject({
      duplicate: false,
      outcome: 'ignored',
      reason: 'already_failed',
      orderId,
    });
    expect((await deliver(chargeRefundUpdated).expect(200)).body).toMatchObject({ outcome: 'ignored', reason: 'already_failed' });
    expect((await deliver(refundUpdated).expect(200)).body).toMatchObject({ duplicate: true, outcome: 'applied' });

    expect(await refundDoc(refunded.body.id)).toMatchObject({ state: 'failed', failureReason: 'failed_at_provider', providerRefundId });
    expect(await order(orderId)).toMatchObject({ state: 'saved', capturedMinor: 2500, refundedMinor: 0, refundableMinor: 2500 });
    const after = await books(orderId);
    expect(after.balanced).toBe(true);
    // The sale stands again: revenue 2500 earned, 2500 with the provider.
    expect(after.net).toMatchObject({ revenue: -2500, payment_provider_clearing: 2500, customer_receivable: 0 });
    expect(after.journals).toEqual([`jrn_${orderId}`, `jrn_${refunded.body.id}`, `jrn_${refunded.body.id}_failed`]);
    const events = await outbox(orderId, 'order.refund_failed');
    expect(events).toHaveLength(1);
    expect(events[0].payload).toMatchObject({ id: refunded.body.id, state: 'failed', refundedMinor: 0 });
    expect(await outbox(orderId, 'order.refunded')).toHaveLength(1);
    expect(await t.db.collection('webhook_inbox').countDocuments({ orderId, type: 'refund.failed', outcome: 'applied' })).toBe(1);

    // Refundable again: the customer can be refunded, for real this time.
    await refund(orderId, 'late-fail-refund-2', 2500).expect(201);
    expect(await order(orderId)).toMatchObject({ state: 'refunded', refundedMinor: 2500, refundableMinor: 0 });
    expect((await books(orderId)).balanced).toBe(true);

    // The invariant checker on both books: the failed refund's reversal and its compensation net to nothing.
    const providerBooks = t.db.client.db(`${t.db.databaseName}_stripe_books`);
    await exportBooks(fake, providerBooks);
    expect(await findViolations({ db: t.db, simulatorDb: providerBooks })).toEqual([]);

    // Stripe's books and ours agree: its failed refund put the money back, our compensation did too.
    const report = await t.app.get(SettlementReconciliation).run(new Date(Date.now() - 60 * 60 * 1000), new Date(Date.now() + 60_000));
    expect(report.mismatches).toEqual([]);
  });

  it('one of two refunds failing late: the order goes back to partially_refunded, then to saved', async () => {
    const orderId = await paidOrder('late-fail-order-2');
    const first = await refund(orderId, 'late-fail-refund-3', 1000).expect(201);
    const second = await refund(orderId, 'late-fail-refund-4', 1500).expect(201);
    expect(await order(orderId)).toMatchObject({ state: 'refunded', refundedMinor: 2500, refundableMinor: 0 });
    const providerId = async (id: string) => (await refundDoc(id))!.providerRefundId as string;

    const [secondFailed] = fake.failRefund(await providerId(second.body.id));
    expect((await deliver(secondFailed).expect(200)).body).toMatchObject({ outcome: 'applied', orderId });
    expect(await order(orderId)).toMatchObject({ state: 'partially_refunded', refundedMinor: 1000, refundableMinor: 1500 });

    const [firstFailed] = fake.failRefund(await providerId(first.body.id), 'lost_or_stolen_card');
    expect((await deliver(firstFailed).expect(200)).body).toMatchObject({ outcome: 'applied', orderId });
    expect(await order(orderId)).toMatchObject({ state: 'saved', refundedMinor: 0, refundableMinor: 2500 });
    const after = await books(orderId);
    expect(after.balanced).toBe(true);
    expect(after.net).toMatchObject({ revenue: -2500, payment_provider_clearing: 2500 });
    expect(await outbox(orderId, 'order.refund_failed')).toHaveLength(2);
  });

  it('a failure of a refund that is not ours, or carries no refund key, is acknowledged and changes nothing', async () => {
    const orderId = await paidOrder('late-fail-order-3');
    const refunded = await refund(orderId, 'late-fail-refund-5', 500).expect(201);
    const providerRefundId = (await refundDoc(refunded.body.id))!.providerRefundId as string;
    const [failed] = fake.failRefund(providerRefundId);
    const object = failed.object;
    const stranger = {
      ...failed,
      id: 'evt_not_our_refund',
      object: { ...object, metadata: { refund_key: 'refund:re_000000000000000000000000' } },
    };
    expect((await deliver(stranger).expect(200)).body).toMatchObject({ outcome: 'ignored', reason: 'unknown_refund', orderId: null });
    const keyless = { ...failed, id: 'evt_no_refund_key', object: { ...object, metadata: {} } };
    expect((await deliver(keyless).expect(200)).body).toMatchObject({ outcome: 'unknown_type' });
    // A refund.updated that is not a failure moves nothing either.
    const stillSucceeded = { ...failed, id: 'evt_refund_updated_ok', type: 'refund.updated', object: { ...object, status: 'succeeded' } };
    expect((await deliver(stillSucceeded).expect(200)).body).toMatchObject({ outcome: 'unknown_type' });
    // Another amount than ours under our key: left for a human, never applied.
    const otherAmount = { ...failed, id: 'evt_refund_other_amount', object: { ...object, amount: 499 } };
    expect((await deliver(otherAmount).expect(200)).body).toMatchObject({ outcome: 'ignored', reason: 'amount_mismatch', orderId });
    expect(await refundDoc(refunded.body.id)).toMatchObject({ state: 'succeeded' });
    expect(await order(orderId)).toMatchObject({ state: 'partially_refunded', refundedMinor: 500, refundableMinor: 2000 });
    expect(await outbox(orderId, 'order.refund_failed')).toHaveLength(0);
  });
});
