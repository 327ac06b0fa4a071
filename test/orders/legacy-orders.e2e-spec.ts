import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { OrderRepository } from '../../src/orders/order.repository.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const MONEY_FIELDS = {
  capture: '',
  authorizedMinor: '',
  capturedMinor: '',
  refundedMinor: '',
  refundableMinor: '',
  authorizationExpiresAt: '',
};

/**
 * Orders an earlier release stored, before the money fields (captured,
 * refunded, refundable) existed: the service fills them from the order's
 * state at boot, so they refund like any other - and not one minor unit more.
 */
describe('orders of an earlier release', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_legacy_orders' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  /** A saved order and a failed one, then stripped back to what the earlier release wrote. */
  async function legacyOrders(): Promise<{ saved: string; failed: string }> {
    const saved = (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-legacy').send(orderBody()).expect(201)).body
      .id as string;
    const declined = orderBody({ paymentMethod: { token: 'tok_decline' } });
    const failed = (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-legacy-2').send(declined).expect(402)).body
      .orderId as string;
    await t.db.collection('orders').updateMany({}, { $unset: MONEY_FIELDS });
    return { saved, failed };
  }

  it('fills the amounts each state implies, once, and the saved order refunds exactly its amount', async () => {
    const { saved, failed } = await legacyOrders();
    const repository = t.app.get(OrderRepository);
    expect(await repository.backfillMoneyFields(1)).toBe(2);
    // Again: nothing is left to fill.
    expect(await repository.backfillMoneyFields()).toBe(0);
    expect(await t.db.collection('orders').findOne({ _id: saved as never })).toMatchObject({
      capture: 'automatic',
      authorizedMinor: 2500,
      capturedMinor: 2500,
      refundedMinor: 0,
      refundableMinor: 2500,
    });
    expect(await t.db.collection('orders').findOne({ _id: failed as never })).toMatchObject({ capturedMinor: 0, refundableMinor: 0 });

    const refund = (key: string, amountMinor: number) =>
      t.http().post(`/v1/orders/${saved}/refunds`).set(auth()).set('Idempotency-Key', key).send({ amountMinor, reason: 'duplicate' });
    await refund('k-refund-all', 2500).expect(201);
    const more = await refund('k-refund-more', 1).expect(409);
    expect(more.body.code).toBe('order_not_refundable');
    await t
      .http()
      .post(`/v1/orders/${failed}/refunds`)
      .set(auth())
      .set('Idempotency-Key', 'k-refund-failed')
      .send({ amountMinor: 1, reason: 'duplicate' })
      .expect(409);
    expect(await findViolations(t)).toEqual([]);
  });

  it('runs at boot: a restarted service fills them without being asked', async () => {
    const { saved } = await legacyOrders();
    const restarted = await startApp({ dbName: 'test_legacy_orders', keepData: true });
    try {
      for (let waited = 0; waited < 5000; waited += 50) {
        if ((await t.db.collection('orders').countDocuments({ capturedMinor: { $exists: false } })) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await t.db.collection('orders').findOne({ _id: saved as never })).toMatchObject({
        capturedMinor: 2500,
        refundableMinor: 2500,
      });
    } finally {
      await restarted.close();
    }
  });
});
