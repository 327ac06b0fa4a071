// Hostile request bodies and headers (issue 13, item 6): each is
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
});
