import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { RefundsService } from '../../src/refunds/refunds.service.js';
import { StripeFake, type FakeEvent } from '../support/stripe-fake/stripe-fake.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const WEBHOOK_SECRET = 'whsec_fake0123456789abcdef';

/**
 * Issue 49 item 2: a card refund Stripe answered `succeeded` can fail days
 * later (refund.failed): the money is back with us and the order charged
 * again. A cancel by key decides on final money, so its answer follows the
 * refund's final state: every repeat after the failure answers
 * `refund_failed` (the order named, still charged), never `refunded` or
 * `nothing_to_undo` for money that was not given back. The key stays
 * canceled (creates under it refused); the money goes back by refunding the
 * order by its id.
 */
describe('cancel by key after the refund it counted on fails late', () => {
  const fake = new StripeFake();
  let t: TestApp;

  beforeAll(async () => {
    await fake.start();
    fake.webhookSecret = WEBHOOK_SECRET;
    t = await startApp({
      dbName: 'test_cancel_refund_failed_late',
      env: {
        ...fake.serviceEnv(WEBHOOK_SECRET),
        STRIPE_MAX_NETWORK_RETRIES: '0',
      },
    });
  });
  beforeEach(async () => {
    fake.reset();
    fake.webhookSecret = WEBHOOK_SECRET;
    await t.reset();
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await t?.close();
    await fake.stop();
  });

  const create = (key: string) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody());
  const cancel = (key: string) =>
    t
      .http()
      .post(`/v1/idempotency-keys/${encodeURIComponent(key)}/cancel`)
      .set(auth());
  const deliver = (event: FakeEvent) => {
    const { payload, header } = fake.signed(event);
    return t.http().post('/v1/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', header).send(payload);
  };
  /** Stripe fails the refund late; its refund.failed is delivered and applied. */
  const failLate = async (refundId: string) => {
    const refund = await t.db.collection('refunds').findOne({ _id: refundId as never });
    const [failed] = fake.failRefund(refund!.providerRefundId as string);
    expect((await deliver(failed).expect(200)).body).toMatchObject({ outcome: 'applied' });
  };
  const order = (orderId: string) => t.db.collection('orders').findOne({ _id: orderId as never });

  it('the cancel refunded: after refund.failed every repeat answers refund_failed with the order still charged', async () => {
    const orderId = (await create('late-cancel-1').expect(201)).body.id as string;
    const first = await cancel('late-cancel-1').expect(200);
    expect(first.body).toMatchObject({ status: 'canceled', outcome: 'refunded', orderId });
    const refundId = first.body.refundId as string;
    await failLate(refundId);
    expect(await order(orderId)).toMatchObject({ state: 'saved', capturedMinor: 2500, refundedMinor: 0 });

    const repeat = await cancel('late-cancel-1').expect(200);
    expect(repeat.body).toMatchObject({ status: 'canceled', outcome: 'refund_failed', orderId, refundId });
    // Still one refund: the answer changed, nothing was sent again.
    expect(await t.db.collection('refunds').countDocuments({ orderId })).toBe(1);
    // The key stays canceled; the money goes back by refunding the order by its id.
    expect((await create('late-cancel-1').expect(409)).body.code).toBe('idempotency_key_canceled');
  });

  it("the cancel found nothing to undo after a client's full refund: once that refund fails, the repeat answers refund_failed", async () => {
    const orderId = (await create('late-cancel-2').expect(201)).body.id as string;
    const refunded = await t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', 'late-cancel-2-refund')
      .send({ amountMinor: 2500, reason: 'requested_by_customer' })
      .expect(201);
    expect((await cancel('late-cancel-2').expect(200)).body).toMatchObject({ outcome: 'nothing_to_undo', orderId });
    await failLate(refunded.body.id as string);
    expect(await order(orderId)).toMatchObject({ state: 'saved', refundedMinor: 0 });
    expect((await cancel('late-cancel-2').expect(200)).body).toMatchObject({ status: 'canceled', outcome: 'refund_failed', orderId });
  });

  it('the cancel refunded the rest after a refund by id: when that refund by id fails late, the repeat answers refund_failed', async () => {
    // The cancel's own refund succeeded, but it was only the rest: the answer relied on the client's 1,000 too.
    const orderId = (await create('late-cancel-5').expect(201)).body.id as string;
    const byId = await t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', 'late-cancel-5-refund')
      .send({ amountMinor: 1000, reason: 'requested_by_customer' })
      .expect(201);
    const first = await cancel('late-cancel-5').expect(200);
    expect(first.body).toMatchObject({ outcome: 'refunded', orderId });
    const refundId = first.body.refundId as string;
    expect(await t.db.collection('refunds').findOne({ _id: refundId as never })).toMatchObject({ amountMinor: 1500 });
    await failLate(byId.body.id as string);
    expect(await order(orderId)).toMatchObject({ state: 'partially_refunded', capturedMinor: 2500, refundedMinor: 1500 });
    const repeat = await cancel('late-cancel-5').expect(200);
    expect(repeat.body).toMatchObject({ status: 'canceled', outcome: 'refund_failed', orderId, refundId });
    expect(await t.db.collection('refunds').countDocuments({ orderId })).toBe(2); // nothing sent again
  });

  it('once the client gave the money back by a refund by id (as the docs advise), the repeat no longer answers refund_failed', async () => {
    const orderId = (await create('late-cancel-3').expect(201)).body.id as string;
    const first = await cancel('late-cancel-3').expect(200);
    const refundId = first.body.refundId as string;
    await failLate(refundId);
    await t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', 'late-cancel-3-refund')
      .send({ amountMinor: 2500, reason: 'requested_by_customer' })
      .expect(201);
    expect(await order(orderId)).toMatchObject({ capturedMinor: 2500, refundedMinor: 2500 });
    const repeat = await cancel('late-cancel-3').expect(200);
    expect(repeat.body).toMatchObject({ status: 'canceled', outcome: 'refunded', orderId, refundId });
  });

  it("a store error reading the cancel's own refund is a 503, never a stale answer", async () => {
    const orderId = (await create('late-cancel-4').expect(201)).body.id as string;
    const refundId = (await cancel('late-cancel-4').expect(200)).body.refundId as string;
    await failLate(refundId);
    const down = Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
    const get = jest.spyOn(t.app.get(RefundsService), 'get').mockRejectedValueOnce(down);
    try {
      const res = await cancel('late-cancel-4');
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('store_unavailable');
    } finally {
      get.mockRestore();
    }
    expect((await cancel('late-cancel-4').expect(200)).body).toMatchObject({ outcome: 'refund_failed', orderId });
  });
});
