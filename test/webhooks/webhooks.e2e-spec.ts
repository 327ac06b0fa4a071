import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { deliver, effectsOf, eventBody, eventFor, newWebhookSecret, SAVED_ONCE, UNTOUCHED } from '../support/webhooks.js';

/**
 * POST /v1/webhooks/payments: Standard Webhooks signatures, the inbox's
 * exactly-once, out-of-order events - each asserted on the database (the
 * order, its payment, journal and outbox event, the inbox rows), not only on
 * the answer.
 */
describe('provider webhooks: signatures, the inbox, order', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  const current = newWebhookSecret();
  const previous = newWebhookSecret();
  let keySeq = 0;
  const BODY_LIMIT = 2048;

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_webhooks',
      env: { WEBHOOK_SECRETS: `${current},${previous}`, WEBHOOK_BODY_LIMIT_BYTES: String(BODY_LIMIT) },
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
  });
  beforeEach(async () => {
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
    gateway.reset();
  });
  afterAll(async () => t.close());

  /** An order paid with an asynchronous method: 202, `processing`, the charge processing at the provider. */
  async function asyncOrder(): Promise<{ orderId: string; chargeKey: string }> {
    const res = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', `webhooks-${++keySeq}`)
      .send(orderBody({ paymentMethod: { token: 'tok_async' } }))
      .expect(202);
    return { orderId: res.body.id, chargeKey: chargeKeyFor(res.body.id) };
  }

  /** The provider settles the charge, then its outcome event (what it would send by webhook). */
  async function outcome(chargeKey: string, type: 'charge.succeeded' | 'charge.failed') {
    await gateway.settleProcessing(chargeKey, type === 'charge.succeeded' ? 'succeeded' : 'declined');
    return eventFor(t.simulatorDb, chargeKey, type);
  }

  const inbox = () => t.db.collection('webhook_inbox').find({}).sort({ _id: 1 }).toArray();

  describe('signatures', () => {
    it('applies a valid delivery: order saved with one payment, one balanced journal, one outbox event, one inbox row', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const res = await deliver(t, current, event).expect(200);
      expect(res.body).toEqual({ eventId: event.id, duplicate: false, outcome: 'applied', reason: null, orderId });
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect(await inbox()).toMatchObject([{ _id: event.id, type: 'charge.succeeded', outcome: 'applied', orderId, tenant: 'acme' }]);
      const order = await t.http().get(`/v1/orders/${orderId}`).set(auth()).expect(200);
      expect(order.body).toMatchObject({ state: 'saved', paymentId: expect.stringMatching(/^pay_/) });
      expect(await findViolations({ ...t, acknowledgedOrderIds: [orderId], requireSettled: true })).toEqual([]);
    });

    it('refuses a wrong secret, a tampered body and missing headers with 401, writing nothing', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const wrong = await deliver(t, newWebhookSecret(), event).expect(401);
      expect(wrong.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(wrong.body).toMatchObject({ code: 'webhook_signature_invalid', retryable: false });
      const tampered = eventBody(event).replace(/"amountMinor":\d+/, '"amountMinor":1');
      await deliver(t, current, event, { body: tampered, signedBody: eventBody(event) }).expect(401);
      for (const header of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const res = await deliver(t, current, event, { omit: [header] }).expect(401);
        expect(res.body.code).toBe('webhook_signature_invalid');
      }
      await deliver(t, current, event, { headers: { 'webhook-signature': 'v2,abc' } }).expect(401);
      expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
      expect(await inbox()).toEqual([]);
    });

    it('accepts the secret still in rotation, and a delivery signed with several secrets of which one is current', async () => {
      const first = await asyncOrder();
      await deliver(t, current, await outcome(first.chargeKey, 'charge.succeeded'), { secrets: [previous] }).expect(200);
      expect(await effectsOf(t.db, first.orderId)).toEqual(SAVED_ONCE);
      const second = await asyncOrder();
      const event = await outcome(second.chargeKey, 'charge.succeeded');
      await deliver(t, current, event, { secrets: [newWebhookSecret(), current] }).expect(200);
      expect(await effectsOf(t.db, second.orderId)).toEqual(SAVED_ONCE);
    });

    it('refuses a stale or future timestamp (a replayed capture) with 401, writing nothing', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const stale = await deliver(t, current, event, { signedAt: new Date(Date.now() - 6 * 60_000) }).expect(401);
      expect(stale.body).toMatchObject({ code: 'webhook_timestamp_out_of_tolerance', retryable: false });
      await deliver(t, current, event, { signedAt: new Date(Date.now() + 6 * 60_000) }).expect(401);
      await deliver(t, current, event, { headers: { 'webhook-timestamp': 'yesterday' } }).expect(401);
      expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
      expect(await inbox()).toEqual([]);
    });

    it('acknowledges a replay of an accepted delivery (same bytes, same headers) as a duplicate that changes nothing', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const signedAt = new Date();
      await deliver(t, current, event, { signedAt }).expect(200);
      const replay = await deliver(t, current, event, { signedAt }).expect(200);
      expect(replay.body).toMatchObject({ eventId: event.id, duplicate: true, outcome: 'applied' });
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect(await inbox()).toHaveLength(1);
    });
  });

  describe('bodies', () => {
    it('refuses a signed body that is not JSON, or not an event, with 400; an oversized one with 413; nothing written', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const notJson = await deliver(t, current, event, { body: '{"type": "charge.succeeded",' }).expect(400);
      expect(notJson.body.code).toBe('malformed_json');
      const deep = await deliver(t, current, event, { body: `${'['.repeat(40)}${']'.repeat(40)}` }).expect(400);
      expect(deep.body.code).toBe('json_too_deep');
      const proto = await deliver(t, current, event, {
        body: '{"__proto__": {"x": 1}, "type": "a.b", "timestamp": "2026-01-01T00:00:00Z"}',
      });
      expect(proto.status).toBe(400);
      const wrongShape = JSON.stringify({
        type: 'charge.succeeded',
        timestamp: new Date().toISOString(),
        data: { chargeKey, amountMinor: -1 },
      });
      const invalid = await deliver(t, current, event, { body: wrongShape }).expect(400);
      expect(invalid.body).toMatchObject({ code: 'webhook_event_invalid', retryable: false });
      const array = await deliver(t, current, event, { body: '[1,2]' }).expect(400);
      expect(array.body.code).toBe('webhook_event_invalid');
      const big = JSON.stringify({ type: 'charge.succeeded', timestamp: new Date().toISOString(), data: { pad: 'x'.repeat(BODY_LIMIT) } });
      const oversized = await deliver(t, current, event, { body: big }).expect(413);
      expect(oversized.body.code).toBe('payload_too_large');
      const form = await t.http().post('/v1/webhooks/payments').set('content-type', 'text/plain').send('hello').expect(415);
      expect(form.body.code).toBe('unsupported_media_type');
      expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
      expect(await inbox()).toEqual([]);
    });
  });

  describe('exactly once', () => {
    it('applies an event once however often it is delivered in sequence', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const answers = [];
      for (let copy = 0; copy < 4; copy++) answers.push((await deliver(t, current, event).expect(200)).body.duplicate);
      expect(answers).toEqual([false, true, true, true]);
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect(await inbox()).toHaveLength(1);
    });

    it('applies an event once when 20 copies arrive at the same time: one effect, every copy 200', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const answers = await Promise.all(Array.from({ length: 20 }, () => deliver(t, current, event)));
      expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
      expect(answers.filter((res) => !res.body.duplicate)).toHaveLength(1);
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect(await t.db.collection('payments').countDocuments()).toBe(1);
      expect(await t.db.collection('ledger_entries').countDocuments()).toBe(4);
      expect(await t.db.collection('outbox_events').countDocuments()).toBe(1);
      expect(await inbox()).toMatchObject([{ _id: event.id, outcome: 'applied' }]);
      expect(await findViolations({ ...t, acknowledgedOrderIds: [orderId], requireSettled: true })).toEqual([]);
    });

    it('settles a declined asynchronous charge as failed, with no payment, journal or event', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.failed');
      await Promise.all([deliver(t, current, event), deliver(t, current, event)]);
      expect(await effectsOf(t.db, orderId)).toEqual({ state: 'failed', payments: 0, ledgerLines: 0, balanced: true, completedEvents: 0 });
      expect(await t.db.collection('orders').findOne({ _id: orderId as never })).toMatchObject({ failureReason: 'card_declined' });
      expect(await inbox()).toMatchObject([{ _id: event.id, outcome: 'applied' }]);
      expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
    });
  });

  describe('handler failures', () => {
    it('answers 500 for an unexpected failure and 503 + Retry-After for a store fault mid-effect, leaving no half effect; the retry applies it once', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const ledger = t.app.get(LedgerService);
      const storeDown = Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
      // After the inbox row, the payment and the charged transition were written in the same transaction.
      const spy = jest.spyOn(ledger, 'post').mockRejectedValueOnce(new Error('boom')).mockRejectedValueOnce(storeDown);
      try {
        const crashed = await deliver(t, current, event).expect(500);
        expect(crashed.body.code).toBe('internal_error');
        expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
        expect(await inbox()).toEqual([]);
        const unavailable = await deliver(t, current, event).expect(503);
        expect(unavailable.body.code).toBe('store_unavailable');
        expect(Number(unavailable.headers['retry-after'])).toBeGreaterThan(0);
        expect(await effectsOf(t.db, orderId)).toEqual(UNTOUCHED);
        expect(await inbox()).toEqual([]);
      } finally {
        spy.mockRestore();
      }
      await deliver(t, current, event).expect(200);
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect(await inbox()).toHaveLength(1);
    });
  });

  describe('out of order and unknown', () => {
    it('ignores a late charge.processing and a conflicting charge.failed after charge.succeeded: recorded, nothing changed', async () => {
      const { orderId, chargeKey } = await asyncOrder();
      const processing = await eventFor(t.simulatorDb, chargeKey, 'charge.processing');
      const succeeded = await outcome(chargeKey, 'charge.succeeded');
      const failed = await outcome(chargeKey, 'charge.failed');
      await deliver(t, current, succeeded).expect(200);
      const late = await deliver(t, current, processing).expect(200);
      expect(late.body).toMatchObject({ duplicate: false, outcome: 'ignored', reason: 'no_change' });
      const conflicting = await deliver(t, current, failed).expect(200);
      expect(conflicting.body).toMatchObject({ outcome: 'ignored', reason: 'conflicting_outcome' });
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
      expect((await inbox()).map((row) => [row.type, row.outcome, row.reason])).toEqual(
        expect.arrayContaining([
          ['charge.succeeded', 'applied', null],
          ['charge.processing', 'ignored', 'no_change'],
          ['charge.failed', 'ignored', 'conflicting_outcome'],
        ]),
      );
    });

    it('answers 503 + Retry-After, writing nothing, for an outcome that overtakes its own order (still pending); the retry applies it', async () => {
      const held = gateway.holdNextCharge('after');
      const creating = t
        .http()
        .post('/v1/orders')
        .set(auth())
        .set('Idempotency-Key', `webhooks-${++keySeq}`)
        .send(orderBody({ paymentMethod: { token: 'tok_async' } }));
      const done = creating.then((res) => res);
      const orderId = await held.reached;
      const chargeKey = chargeKeyFor(orderId);
      const event = await outcome(chargeKey, 'charge.succeeded');
      const early = await deliver(t, current, event).expect(503);
      expect(early.body).toMatchObject({ code: 'webhook_not_ready', retryable: true });
      expect(Number(early.headers['retry-after'])).toBeGreaterThan(0);
      expect(await inbox()).toEqual([]);
      held.release();
      expect((await done).status).toBe(202);
      await deliver(t, current, event).expect(200);
      expect(await effectsOf(t.db, orderId)).toEqual(SAVED_ONCE);
    });

    it('records and acknowledges an unknown event type, and an event about a charge that is not ours', async () => {
      const unknown = { id: 'evt_payout_1', type: 'payout.paid', timestamp: new Date(), data: { amount: 5 } };
      const res = await deliver(t, current, unknown).expect(200);
      expect(res.body).toEqual({ eventId: 'evt_payout_1', duplicate: false, outcome: 'unknown_type', reason: null, orderId: null });
      const stranger = {
        id: 'evt_ch_stranger_succeeded',
        type: 'charge.succeeded',
        timestamp: new Date(),
        data: { chargeKey: 'charge:ord_0123456789abcdef01234567', chargeId: 'ch_stranger', amountMinor: 100, currency: 'USD', sequence: 2 },
      };
      const ignored = await deliver(t, current, stranger).expect(200);
      expect(ignored.body).toMatchObject({ outcome: 'ignored', reason: 'unknown_order', orderId: null });
      expect((await inbox()).map((row) => [row._id, row.outcome])).toEqual([
        ['evt_ch_stranger_succeeded', 'ignored'],
        ['evt_payout_1', 'unknown_type'],
      ]);
      expect(await t.db.collection('payments').countDocuments()).toBe(0);
    });

    it('needs no tenant key, and a tenant key is no substitute for the signature', async () => {
      const { chargeKey } = await asyncOrder();
      const event = await outcome(chargeKey, 'charge.succeeded');
      const res = await t
        .http()
        .post('/v1/webhooks/payments')
        .set(auth())
        .set('content-type', 'application/json')
        .send(eventBody(event))
        .expect(401);
      expect(res.body.code).toBe('webhook_signature_invalid');
    });
  });
});
