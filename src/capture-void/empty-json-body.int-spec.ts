import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { auth, orderBody, startApp, type TestApp } from '../../test/support/test-app.js';

/**
 * Clients that send `Content-Type: application/json` on every request, with
 * an empty body where the body is optional: capture (the whole
 * authorization) and void run as without a body; a create, whose body is
 * required, is still refused with nothing written.
 */
describe('an empty body under Content-Type: application/json', () => {
  let t: TestApp;
  let seq = 0;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_empty_json_body' });
  });
  beforeEach(async () => t.reset());
  afterAll(async () => t.close());

  const emptyJson = (path: string, key: string) =>
    t.http().post(path).set(auth()).set('Idempotency-Key', key).set('Content-Type', 'application/json').send('');
  const orderDoc = (id: string) => t.db.collection('orders').findOne({ _id: id as never });

  async function authorizedOrder(): Promise<{ id: string; authorizedMinor: number }> {
    const created = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', `empty-create-${++seq}`)
      .send(orderBody({ capture: 'manual' }))
      .expect(201);
    expect(created.body.state).toBe('authorized');
    return { id: created.body.id as string, authorizedMinor: (await orderDoc(created.body.id as string))!.authorizedMinor as number };
  }

  it('captures the whole authorization, and replays it', async () => {
    const { id, authorizedMinor } = await authorizedOrder();
    const res = await emptyJson(`/v1/orders/${id}/capture`, 'empty-capture').expect(200);
    expect(res.body).toMatchObject({ id, state: 'captured' });
    expect(await orderDoc(id)).toMatchObject({ state: 'captured', capturedMinor: authorizedMinor, pendingAction: null });
    expect(await t.db.collection('payments').findOne({ orderId: id })).toMatchObject({ status: 'captured' });
    const again = await emptyJson(`/v1/orders/${id}/capture`, 'empty-capture').expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await t.simulatorDb.collection('operations').countDocuments({ kind: 'capture' })).toBe(1);
  });

  it('voids', async () => {
    const { id } = await authorizedOrder();
    const res = await emptyJson(`/v1/orders/${id}/void`, 'empty-void').expect(200);
    expect(res.body).toMatchObject({ id, state: 'voided' });
    expect(await orderDoc(id)).toMatchObject({ state: 'voided', capturedMinor: 0, pendingAction: null });
    expect(await t.simulatorDb.collection('operations').countDocuments({ kind: 'void' })).toBe(1);
  });

  it('a create, whose body is required, is 400 validation_failed with nothing written', async () => {
    const res = await emptyJson('/v1/orders', 'empty-create-body').expect(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await t.db.collection('orders').countDocuments({})).toBe(0);
    expect(await t.db.collection('idempotency_records').countDocuments({})).toBe(0);
  });
});
