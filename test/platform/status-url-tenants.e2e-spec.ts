import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/**
 * The rule (issue 33, item 2): the URLs a create answers with - the order's
 * `Location` (the status URL an asynchronous payment's 202 tells the client
 * to poll), its ledger, its refunds and each refund's own URL - serve only
 * the tenant that created it. Another tenant gets the same 404 as for an
 * order that does not exist (no existence oracle), and learns nothing.
 */
describe('status URLs across tenants', () => {
  let t: TestApp;
  let keySeq = 0;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_status_url_tenants' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const get = (path: string, tenant: 'acme' | 'globex') => t.http().get(path).set(auth(tenant));
  const create = (token: string, status: number) =>
    t
      .http()
      .post('/v1/orders')
      .set(auth('acme'))
      .set('Idempotency-Key', `status-url-${++keySeq}`)
      .send(orderBody({ paymentMethod: { token } }))
      .expect(status);

  /** What another tenant sees of a URL, next to what it sees of an order id that does not exist. */
  async function expectHiddenFromGlobex(path: string, unknownPath: string) {
    const theirs = await get(path, 'globex');
    const none = await get(unknownPath, 'globex');
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe(none.body.code);
    expect(theirs.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(theirs.text).not.toContain('cus_123');
    expect(JSON.stringify(theirs.body).replaceAll(path, '')).toBe(JSON.stringify(none.body).replaceAll(unknownPath, ''));
  }

  const UNKNOWN = 'ord_0123456789abcdef01234567';

  it("serves a processing order's status URL (the 202's Location) to its own tenant only", async () => {
    const created = await create('tok_async', 202);
    const location = created.headers.location as string;
    expect(location).toBe(`/v1/orders/${created.body.id}`);
    await get(location, 'acme').expect(200);
    await expectHiddenFromGlobex(location, `/v1/orders/${UNKNOWN}`);
    const list = await get('/v1/orders', 'globex').expect(200);
    expect(list.body.data).toEqual([]);
  });

  it("serves a saved and refunded order's URLs - the order, its ledger, its refunds, one refund - to its own tenant only", async () => {
    const created = await create('tok_visa', 201);
    const id = created.body.id as string;
    const refund = await t
      .http()
      .post(`/v1/orders/${id}/refunds`)
      .set(auth('acme'))
      .set('Idempotency-Key', `status-url-refund-${keySeq}`)
      .send({ amountMinor: 100, reason: 'requested_by_customer' })
      .expect(201);
    const refundUrl = refund.headers.location as string;
    expect(refundUrl).toBe(`/v1/orders/${id}/refunds/${refund.body.id}`);
    for (const path of [`/v1/orders/${id}`, `/v1/orders/${id}/ledger`, `/v1/orders/${id}/refunds`, refundUrl])
      await get(path, 'acme').expect(200);
    await expectHiddenFromGlobex(`/v1/orders/${id}`, `/v1/orders/${UNKNOWN}`);
    await expectHiddenFromGlobex(`/v1/orders/${id}/ledger`, `/v1/orders/${UNKNOWN}/ledger`);
    await expectHiddenFromGlobex(`/v1/orders/${id}/refunds`, `/v1/orders/${UNKNOWN}/refunds`);
    await expectHiddenFromGlobex(refundUrl, `/v1/orders/${UNKNOWN}/refunds/${refund.body.id}`);
  });
});
