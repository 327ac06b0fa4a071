import { describe, expect, it } from '@jest/globals';
import { useStripeTestApp } from '../support/stripe-fake/stripe-test-app.js';
import { auth, orderBody } from '../support/test-app.js';

/**
 * Amounts Stripe refuses (below its per-currency minimum, above 8 digits, a
 * three-decimal currency not ending in 0) are bad input: a 422 problem
 * before anything is claimed, never a 500 after a pending order (issue 49
 * item 3). Nothing is written and nothing reaches Stripe.
 */
describe('Stripe: order totals the provider refuses are a 422 before the claim', () => {
  const stripe = useStripeTestApp('test_stripe_amount_limits');
  const fake = stripe.fake;

  const create = (key: string, currency: string, unitPriceMinor: number, quantity = 1) =>
    stripe.app
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ currency, items: [{ sku: 'sku_1', quantity, unitPriceMinor }] }));

  it.each([
    ['under the USD minimum (50)', 'USD', 49, 1, /USD.*50/],
    ['under the JPY minimum (50 yen)', 'JPY', 49, 1, /JPY.*50/],
    ['over 8 digits', 'USD', 50_000_000, 2, /99999999/],
    ['a three-decimal currency whose last digit is not 0', 'KWD', 1005, 1, /KWD.*10/],
  ])('%s: 422 amount_out_of_range, nothing claimed, nothing sent', async (_name, currency, unitPriceMinor, quantity, detail) => {
    const refused = await create(`limits-${currency}-${unitPriceMinor}-${quantity}`, currency, unitPriceMinor, quantity);
    expect([refused.status, refused.body.code]).toEqual([422, 'amount_out_of_range']);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body.detail).toMatch(detail);
    for (const collection of ['orders', 'idempotency_records', 'stripe_requests'])
      expect([collection, await stripe.app.db.collection(collection).countDocuments()]).toEqual([collection, 0]);
    expect(fake.requests).toEqual([]);
  });

  it('the smallest and the largest accepted totals are charged', async () => {
    await create('limits-min', 'USD', 50).expect(201);
    await create('limits-max', 'USD', 99_999_999).expect(201);
    await create('limits-kwd', 'KWD', 1010).expect(201);
  });
});
