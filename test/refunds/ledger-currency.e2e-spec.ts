import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { findViolations } from '../support/invariants.js';
import { manualCaptureViolations } from '../support/manual-capture-invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/**
 * The rule (issue 33, defect (b)): every journal line - the sale, each
 * refund's reversal, a cancel's refund - is in its order's currency, and so
 * is what the provider refunded. Every other refund test is of a USD order,
 * so a reversal booked in a fixed 'USD' passed them all; here the orders are
 * in EUR and in JPY, a zero-decimal currency (an amount of 1500 is 1500 yen,
 * refunded to the unit).
 */
describe('ledger currency: refunds of non-USD orders', () => {
  let t: TestApp;
  let keySeq = 0;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_ledger_currency' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (path: string, body: object = {}) =>
    t.http().post(path).set(auth()).set('Idempotency-Key', `currency-${++keySeq}`).send(body);

  async function order(currency: string, price: number, capture?: 'manual'): Promise<string> {
    const body = orderBody({ currency, items: [{ sku: 'sku_fx', quantity: 1, unitPriceMinor: price }], ...(capture ? { capture } : {}) });
    const res = await post('/v1/orders', body).expect(201);
    expect(res.body).toMatchObject({ currency, amountMinor: price });
    return res.body.id as string;
  }

  /** Every journal line of the order, as the API shows it and as stored; and the provider's refunds of it. */
  async function books(orderId: string) {
    const api = await t.http().get(`/v1/orders/${orderId}/ledger`).set(auth()).expect(200);
    const stored = await t.db.collection<{ journalId: string; currency: string }>('ledger_entries').find({ orderId }).toArray();
    const provider = await t.simulatorDb
      .collection<{ currency: string; amountMinor: number }>('operations')
      .find({ chargeKey: `charge:${orderId}`, kind: 'refund', status: 'succeeded' })
      .toArray();
    return {
      apiCurrencies: [...new Set((api.body.entries as { currency: string }[]).map((entry) => entry.currency))],
      storedCurrencies: [...new Set(stored.map((entry) => entry.currency))],
      journals: new Set(stored.map((entry) => entry.journalId)).size,
      providerRefunds: provider.map((operation) => `${operation.amountMinor} ${operation.currency}`).sort(),
    };
  }

  it.each([
    ['EUR', 1999, 700],
    ['JPY', 1500, 1],
  ])('books a %s order and its two refunds (down to what is left) in the order currency', async (currency, price, first) => {
    const id = await order(currency, price);
    const one = await post(`/v1/orders/${id}/refunds`, { amountMinor: first, reason: 'requested_by_customer' }).expect(201);
    expect(one.body).toMatchObject({ amountMinor: first, currency, state: 'succeeded' });
    // Exactly what is left: one minor unit more would be refused.
    await post(`/v1/orders/${id}/refunds`, { amountMinor: price - first + 1, reason: 'requested_by_customer' }).expect(422);
    const rest = await post(`/v1/orders/${id}/refunds`, { amountMinor: price - first, reason: 'requested_by_customer' }).expect(201);
    expect(rest.body).toMatchObject({ amountMinor: price - first, currency });
    expect(await books(id)).toEqual({
      apiCurrencies: [currency],
      storedCurrencies: [currency],
      journals: 3,
      providerRefunds: [`${first} ${currency}`, `${price - first} ${currency}`].sort(),
    });
    const view = await t.http().get(`/v1/orders/${id}`).set(auth()).expect(200);
    expect(view.body).toMatchObject({ state: 'refunded', currency, refundedMinor: price });
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
  });

  it('books a manually captured JPY order, a partial capture and its refund in yen', async () => {
    const id = await order('JPY', 3000, 'manual');
    await post(`/v1/orders/${id}/capture`, { amountMinor: 2999 }).expect(200);
    await post(`/v1/orders/${id}/refunds`, { amountMinor: 2999, reason: 'requested_by_customer' }).expect(201);
    expect(await books(id)).toEqual({ apiCurrencies: ['JPY'], storedCurrencies: ['JPY'], journals: 2, providerRefunds: ['2999 JPY'] });
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
    expect(await manualCaptureViolations(t.db, t.simulatorDb)).toEqual([]);
  });

  it("books a cancel by key's refund of a JPY order in yen", async () => {
    const key = `currency-cancel-${++keySeq}`;
    const body = orderBody({ currency: 'JPY', items: [{ sku: 'sku_fx', quantity: 3, unitPriceMinor: 500 }] });
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body).expect(201);
    const cancel = await t.http().post(`/v1/idempotency-keys/${key}/cancel`).set(auth()).expect(200);
    expect(cancel.body).toMatchObject({ outcome: 'refunded' });
    expect(await books(created.body.id)).toEqual({
      apiCurrencies: ['JPY'],
      storedCurrencies: ['JPY'],
      journals: 2,
      providerRefunds: ['1500 JPY'],
    });
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
  });
});
