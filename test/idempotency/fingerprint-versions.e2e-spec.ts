import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { canonicalJson } from '@idempotent-orders/nest-idempotency/testing';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** New records carry the RFC 8785 fingerprint; a record stored by an earlier release (v1) keeps working until it expires. */
describe('fingerprint algorithms', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ dbName: 'test_fingerprint_versions' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const post = (key: string, body: object) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);

  it('stores sha256-jcs-v2, and still replays (or refuses) against a record stored under sha256-cjson-v1', async () => {
    const body = orderBody();
    const first = await post('k-v1', body).expect(201);
    expect(await t.db.collection('idempotency_records').findOne({})).toMatchObject({ fingerprint: { algorithm: 'sha256-jcs-v2' } });

    // What the previous release stored for this very request.
    const v1 = createHash('sha256')
      .update(canonicalJson({ method: 'POST', route: '/v1/orders', body }))
      .digest('hex');
    await t.db.collection('idempotency_records').updateOne({}, { $set: { fingerprint: { algorithm: 'sha256-cjson-v1', value: v1 } } });

    const again = await post('k-v1', body).expect(201);
    expect({ replayed: again.headers['idempotent-replayed'], text: again.text }).toEqual({ replayed: 'true', text: first.text });
    expect((await post('k-v1', orderBody({ customerId: 'cus_other' })).expect(422)).body.code).toBe('idempotency_key_reused');
    expect(await t.db.collection('orders').countDocuments()).toBe(1);
  });
});
