import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { heldLeases } from '../support/controllable-gateway.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { auth, orderBody } from '../support/test-app.js';
import { deliver, effectsOf, eventFor, newWebhookSecret, SAVED_ONCE } from '../support/webhooks.js';

const LEASE_MS = 1000;

/**
 * A worker that dies after the provider said `processing` and before T1
 * recorded it: the reaper resumes the attempt, finds the charge processing at
 * the provider (chargeOrCancel never cancels a charge that exists), records
 * the 202 the client then gets on its retry, and the webhook settles it.
 */
describe('asynchronous payments: recovery of a dead worker', () => {
  let app: ControlledApp;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_async_recovery',
      env: { IDEMPOTENCY_LOCK_TIMEOUT_MS: String(LEASE_MS), WEBHOOK_SECRETS: secret },
    });
  });
  beforeEach(async () => {
    await app.reset();
    await app.t.db.collection('webhook_inbox').deleteMany({});
  });
  afterAll(async () => app.t.close());

  const post = (key: string) =>
    app.t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', key)
      .send(orderBody({ paymentMethod: { token: 'tok_async' } }));

  it('resumes to processing with the 202 stored, replays it, and the webhook then saves the order once', async () => {
    app.gateway.crashAfterNextCharge();
    await post('k-async-crash').expect(500);
    expect(await heldLeases(app.t.db, LEASE_MS)).toBe(1);
    const order = await app.t.db.collection<{ _id: string }>('orders').findOne({});
    expect(order).toMatchObject({ state: 'pending' });
    await app.expireLeases();
    expect(await app.reaper.runOnce()).toMatchObject({ examined: 1, completed: 1, error: 0 });
    expect(await app.t.db.collection('orders').findOne({})).toMatchObject({ state: 'processing' });
    // Asked, never canceled: the charge is still processing at the provider, and only one was made.
    expect(await app.t.simulatorDb.collection('charges').find({}).toArray()).toMatchObject([{ status: 'processing' }]);
    const replay = await post('k-async-crash').expect(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toMatchObject({ id: order!._id, state: 'processing' });

    await app.gateway.settleProcessing(chargeKeyFor(order!._id), 'succeeded');
    const event = await eventFor(app.t.simulatorDb, chargeKeyFor(order!._id), 'charge.succeeded');
    await deliver(app.t, secret, event).expect(200);
    expect(await effectsOf(app.t.db, order!._id)).toEqual(SAVED_ONCE);
    expect(app.gateway.calls).toBe(1);
  });
});
