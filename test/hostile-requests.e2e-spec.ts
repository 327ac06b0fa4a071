// Hostile request bodies and headers (issue 13, items 6, 7): each is
// refused with a small 4xx problem+json, never a 500, and changes nothing.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from './support/test-app.js';

const ERROR_BODY_BUDGET = 4_096;

describe('hostile requests', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_hostile' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const nothingStored = async () => {
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  };

  const expectProblem = (res: { status: number; headers: Record<string, string>; body: Record<string, unknown>; text: string }, status: number, code: string) => {
    expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toEqual(expect.objectContaining({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String), code }));
    expect(res.text.length).toBeLessThan(ERROR_BODY_BUDGET);
  };

  describe('two Idempotency-Key headers (item 6)', () => {
    it('are refused with 400 idempotency_key_invalid, and a later "a, b" key is a fresh request', async () => {
      // superagent sends an array as two header lines; Node would join them into "k-a, k-b".
      const twice = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', ['k-a', 'k-b'] as unknown as string).send(orderBody());
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

      const tooLong = await t.http().get(`/v1/idempotency-keys/${'y'.repeat(800)}`).set(auth());
      expectProblem(tooLong, 414, 'uri_too_long');
      expect(tooLong.text).not.toContain('yyyy');
      const invalid = await t.http().get(`/v1/idempotency-keys/${'y'.repeat(256)}`).set(auth());
      expectProblem(invalid, 400, 'idempotency_key_invalid');
    });
  });
});
