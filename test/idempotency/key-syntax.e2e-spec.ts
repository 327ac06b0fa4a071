import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** The draft's quoted form of the key (an sf-string) and the bare form name one key, over HTTP and in the database. */
describe('Idempotency-Key syntaxes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_key_syntax' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (header: string) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', header).send(orderBody());

  it('"k" and k are one key: the second form replays the first, one order', async () => {
    const quoted = await post('"order-7c1f"').expect(201);
    const bare = await post('order-7c1f').expect(201);
    expect(bare.headers['idempotent-replayed']).toBe('true');
    expect(bare.text).toBe(quoted.text);
    const escaped = await post('"order-\\"7\\""').expect(201);
    expect((await post('order-"7"').expect(201)).text).toBe(escaped.text);
    expect(await t.db.collection('orders').countDocuments()).toBe(2);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [quoted.body.id, escaped.body.id] })).toEqual([]);
  });

  it('malformed quoting is 400 idempotency_key_invalid and stores nothing', async () => {
    for (const header of ['"unterminated', '"bad\\escape"', '"k";param=1']) {
      const res = await post(header).expect(400);
      expect(res.body.code).toBe('idempotency_key_invalid');
    }
    expect(await t.db.collection('idempotency_records').countDocuments()).toBe(0);
    expect(await t.db.collection('orders').countDocuments()).toBe(0);
  });
});
