// Hostile request bodies and headers (issue 13, items 3, 4, 6, 7, 8, 9): each is
// refused with a small 4xx problem+json, never a 500, and changes nothing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const ERROR_BODY_BUDGET = 4_096;

describe('hostile requests', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_hostile' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const postRaw = (key: string, text: string, contentType = 'application/json') =>
    t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).set('Content-Type', contentType).send(text);

  const nothingStored = async () => {
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  };

  const expectProblem = (
    res: { status: number; headers: Record<string, string>; body: Record<string, unknown>; text: string },
    status: number,
    code: string,
  ) => {
    expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toEqual(
      expect.objectContaining({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String), code }),
    );
    expect(res.text.length).toBeLessThan(ERROR_BODY_BUDGET);
  };

  describe('valid JSON that is not I-JSON (protocol review 3, M1): 400, never 500', () => {
    const body = (customerId: string, quantity: string) =>
      `{"customerId":${customerId},"currency":"USD","items":[{"sku":"s","quantity":${quantity},"unitPriceMinor":1}],"paymentMethod":{"token":"tok_visa"}}`;
    it.each([
      ['a lone high surrogate', body('"\\ud800"', '1')],
      ['a lone low surrogate inside a string', body('"c\\udc00x"', '1')],
      ['a number past the largest double', body('"c"', '1e400')],
      ['an unknown member past the largest double', `{"extra":-1e309,${body('"c"', '1').slice(1)}`],
      ['a lone surrogate as a member name', `{"\\ud800":1,${body('"c"', '1').slice(1)}`],
    ])('refuses %s with 400 json_not_i_json, on a new key and on a used one', async (_, text) => {
      expectProblem(await postRaw('k-ijson', text), 400, 'json_not_i_json');
      await nothingStored();
      // The same key once answered: the early look-up must not fingerprint the raw body into a 500 either.
      await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-ijson').send(orderBody()).expect(201);
      expectProblem(await postRaw('k-ijson', text), 400, 'json_not_i_json');
      expect(await t.db.collection('orders').countDocuments()).toBe(1);
    });

    it('accepts a surrogate pair (a real emoji) as any other string', async () => {
      const res = await postRaw('k-emoji', body('"\\ud83d\\ude00"', '1'));
      expectProblem(res, 400, 'validation_failed'); // the customer id rule, not the parser
    });
  });

  describe('a repeated member name (security review 3, SEC4-05): 400 json_not_i_json on every route, nothing moves', () => {
    it('refuses it on the create, at the top and inside an item', async () => {
      const body = orderBody();
      const top = `{"currency":"EUR",${JSON.stringify(body).slice(1)}`;
      const inItem = JSON.stringify(body).replace('"quantity":', '"quantity":5,"quantity":');
      for (const text of [top, inItem]) {
        expect(() => JSON.parse(text)).not.toThrow();
        expectProblem(await postRaw('k-dup', text), 400, 'json_not_i_json');
      }
      await nothingStored();
    });

    it('refuses it on a refund: {"amountMinor":1,"amountMinor":2} refunds nothing (it refunded 2)', async () => {
      const order = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-dup-order').send(orderBody()).expect(201);
      const res = await t
        .http()
        .post(`/v1/orders/${order.body.id}/refunds`)
        .set(auth())
        .set('Idempotency-Key', 'k-dup-refund')
        .set('Content-Type', 'application/json')
        .send('{"amountMinor":1,"amountMinor":2,"reason":"requested_by_customer"}');
      expectProblem(res, 400, 'json_not_i_json');
      const stored = await t.db.collection('orders').findOne({ _id: order.body.id });
      expect(stored?.refundedMinor ?? 0).toBe(0);
      expect(await t.db.collection('idempotency_records').countDocuments()).toBe(1);
    });
  });

  describe('deep nesting (item 4)', () => {
    it.each([
      ['2,600 nested arrays in customerId', `{"customerId":${'['.repeat(2_600)}${']'.repeat(2_600)}}`],
      ['5,400 nested objects in items', `{"items":${'{"a":'.repeat(5_400)}1${'}'.repeat(5_400)}}`],
      ['30,000 nested arrays as the body', `${'['.repeat(30_000)}${']'.repeat(30_000)}`],
      ['9 levels in paymentMethod', JSON.stringify({ ...orderBody(), paymentMethod: { token: [[[[[[[['tok_visa']]]]]]]] } })],
    ])('refuses %s with 400 json_too_deep', async (_, text) => {
      expectProblem(await postRaw('k-deep', text), 400, 'json_too_deep');
      await nothingStored();
    });
  });

  describe('bodies that cost more to validate than to send (item 3)', () => {
    it('refuses 24,000 empty items before validation, with a small error body', async () => {
      const text = JSON.stringify(orderBody({ items: Array.from({ length: 24_000 }, () => ({})) }));
      expectProblem(await postRaw('k-many', text), 400, 'json_too_many_values');
      await nothingStored();
    });

    it('refuses 320 invalid items by their count alone, without validating each', async () => {
      const res = await postRaw('k-over-long', JSON.stringify(orderBody({ items: Array.from({ length: 320 }, () => ({ sku: 7 })) })));
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual(['items must contain no more than 100 elements']);
      await nothingStored();
    });

    it('caps the error list: 100 invalid items give 10 messages and a count of the rest', async () => {
      const res = await postRaw('k-bad-items', JSON.stringify(orderBody({ items: Array.from({ length: 100 }, () => ({ sku: 7 })) })));
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toHaveLength(10);
      expect(res.body.errors[0]).toMatch(/^items\.0\.sku /);
      expect(res.body.detail).toMatch(/; and 290 more$/);
      await nothingStored();
    });

    it('caps each message: an unknown field with a 20 kB name is not echoed whole', async () => {
      const res = await postRaw('k-long-field', JSON.stringify({ ...orderBody(), ['f'.repeat(20_000)]: 1 }));
      expectProblem(res, 400, 'validation_failed');
      await nothingStored();
    });
  });

  describe('constructor and prototype fields (item 9)', () => {
    it.each([
      ['constructor at the top', { ...orderBody(), constructor: 'x' }, 'constructor'],
      ['prototype at the top', { ...orderBody(), prototype: { admin: true } }, 'prototype'],
      ['constructor in an item', orderBody({ items: [{ sku: 's', quantity: 1, unitPriceMinor: 1, constructor: 1 }] }), 'constructor'],
      ['prototype in paymentMethod', orderBody({ paymentMethod: { token: 'tok_visa', prototype: 1 } }), 'prototype'],
    ])('refuses %s like any unknown field (400, nothing stored)', async (_, body, field) => {
      const res = await postRaw('k-ctor', JSON.stringify(body));
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual([`property ${field} should not exist`]);
      await nothingStored();
    });

    it('refuses __proto__ the same way, and pollutes nothing', async () => {
      const res = await postRaw('k-proto', JSON.stringify(orderBody()).replace('{', '{"__proto__":{"admin":true},'));
      expectProblem(res, 400, 'validation_failed');
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
      await nothingStored();
    });
  });

  describe('form bodies (item 8)', () => {
    it('refuses application/x-www-form-urlencoded with 415 before any validator sees it', async () => {
      const res = await postRaw('k-form', 'customerId=cus_1&currency=USD', 'application/x-www-form-urlencoded');
      expectProblem(res, 415, 'unsupported_media_type');
      await nothingStored();
    });
  });

  describe('two Idempotency-Key headers (item 6)', () => {
    it('are refused with 400 idempotency_key_invalid, and a later "a, b" key is a fresh request', async () => {
      // superagent sends an array as two header lines; Node would join them into "k-a, k-b".
      const twice = await t
        .http()
        .post('/v1/orders')
        .set(auth())
        .set('Idempotency-Key', ['k-a', 'k-b'] as unknown as string)
        .send(orderBody());
      expectProblem(twice, 400, 'idempotency_key_invalid');
      await nothingStored();

      const joined = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-a, k-b').send(orderBody()).expect(201);
      expect(joined.headers['idempotent-replayed']).toBeUndefined();
      expect(await t.db.collection('orders').countDocuments()).toBe(1);
    });
  });

  describe('long keys on the admin API (item 7)', () => {
    it('looks up a 255-character key, and refuses a longer path segment with problem+json 414', async () => {
      const key = `k${'x'.repeat(254)}`;
      await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody()).expect(201);
      const view = await t.http().get(`/v1/idempotency-keys/${key}`).set(auth()).expect(200);
      expect(view.body.records).toHaveLength(1);
      // Every character percent-encoded (3 x 255) still fits.
      const encoded = [...key].map((char) => `%${char.charCodeAt(0).toString(16)}`).join('');
      await t.http().get(`/v1/idempotency-keys/${encoded}`).set(auth()).expect(200);

      const tooLong = await t
        .http()
        .get(`/v1/idempotency-keys/${'y'.repeat(800)}`)
        .set(auth());
      expectProblem(tooLong, 414, 'uri_too_long');
      expect(tooLong.text).not.toContain('yyyy');
      const invalid = await t
        .http()
        .get(`/v1/idempotency-keys/${'y'.repeat(256)}`)
        .set(auth());
      expectProblem(invalid, 400, 'idempotency_key_invalid');
    });
  });
});
