import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { findViolations } from '../support/invariants.js';
import { manualCaptureViolations } from '../support/manual-capture-invariants.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/**
 * The invariant checker is the final database assertion of about fifteen
 * files, so each of its rules must be able to fail: every case here starts
 * from a real paid order, breaks the database the way a defect would, and
 * expects the checker to say so (the audit's probes, test-audit.md F6).
 */
describe('the invariant checker sees money', () => {
  let t: TestApp;
  let orderId: string;

  beforeAll(async () => {
    t = await startApp({ dbName: 'test_invariant_checker' });
  });
  beforeEach(async () => {
    await t.reset();
    const res = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-money').send(orderBody()).expect(201);
    orderId = res.body.id as string;
    expect(await findViolations(t)).toEqual([]);
  });
  afterAll(async () => t.close());

  it('one key and body charged again after retention (its tombstone lost): flagged', async () => {
    await t.db.collection('idempotency_tombstones').deleteMany({});
    await t.db.collection('idempotency_records').updateMany({}, { $set: { expiresAt: new Date(Date.now() - 1) } });
    await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-money').send(orderBody()).expect(201);
    expect(await t.db.collection('orders').countDocuments()).toBe(2);
    expect(await findViolations(t)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`saved order ${orderId} has no tombstone`))]),
    );
  });

  it('a journal whose lines are not the order amount, and a payment that is not its charge: flagged', async () => {
    await t.db.collection('ledger_entries').updateMany({ orderId }, { $set: { amountMinor: 1 } });
    await t.db.collection('payments').updateMany({ orderId }, { $set: { amountMinor: 7 } });
    const violations = await findViolations(t);
    expect(violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/journal lines .* are not the sale and settlement of 2500/),
        expect.stringMatching(/does not match its charge/),
        expect.stringMatching(/the provider holds 2500 for answered orders, the clearing account 1 /),
      ]),
    );
  });

  it('a record failed without an answer beside a saved order: flagged', async () => {
    await t.db.collection('idempotency_records').updateMany({}, { $set: { status: 'failed', response: null } });
    expect(await findViolations(t)).toEqual(expect.arrayContaining([expect.stringMatching(/failed beside its order .* saved/)]));
  });

  it('a complete record whose stored answer names another order, or a stored 5xx: flagged', async () => {
    await t.db
      .collection('idempotency_records')
      .updateMany({}, { $set: { 'response.headers.location': '/v1/orders/ord_000000000000000000000000' } });
    expect(await findViolations(t)).toEqual(expect.arrayContaining([expect.stringMatching(/its stored answer names/)]));
    await t.db.collection('idempotency_records').updateMany({}, { $set: { 'response.status': 503 } });
    expect(await findViolations(t)).toEqual(expect.arrayContaining([expect.stringMatching(/a stored 503/)]));
  });

  it('a final answer whose tombstone is missing: flagged', async () => {
    await t.db.collection('idempotency_tombstones').deleteMany({});
    expect(await findViolations(t)).toEqual(expect.arrayContaining([expect.stringMatching(/a final answer without its tombstone/)]));
  });

  it('an orphan payment, ledger entry or event: flagged', async () => {
    await t.db.collection('orders').deleteMany({});
    const violations = await findViolations(t);
    for (const what of [
      /charge \S+: no order/,
      /payment of order .*: no order/,
      /ledger entries of order .*: no order/,
      /event of order .*: no order/,
    ]) {
      expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(what)]));
    }
  });
  it('a provider refund we never recorded, or a refund past the captured amount: flagged', async () => {
    await t.simulatorDb.collection<{ _id: string }>('operations').insertOne({
      _id: 'refund:re_unrecorded',
      kind: 'refund',
      status: 'succeeded',
      reason: null,
      id: 're_x',
      chargeKey: `charge:${orderId}`,
      amountMinor: 100,
      currency: 'USD',
      createdAt: new Date(),
    } as never);
    await t.db.collection('orders').updateOne({ _id: orderId as never }, { $set: { refundedMinor: 3000 } });
    const violations = await findViolations(t);
    for (const what of [
      /1 provider refunds, 0 succeeded refunds, 0 reversal journals/,
      /refunded 3000 <= captured 2500 <= authorized 2500 <= 2500 broken/,
      /the provider holds 2400 for answered orders, the clearing account 2500 /,
    ]) {
      expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(what)]));
    }
  });

  it('a refundable amount that is not captured less refunded, and a capture beside a void: flagged', async () => {
    await t.db.collection('orders').updateOne({ _id: orderId as never }, { $set: { refundableMinor: 100 } });
    for (const kind of ['capture', 'void']) {
      await t.simulatorDb.collection<{ _id: string }>('operations').insertOne({
        _id: `${kind}:x`,
        kind,
        status: 'succeeded',
        reason: null,
        id: `${kind}_x`,
        chargeKey: `charge:${orderId}`,
        amountMinor: 2500,
        currency: 'USD',
        createdAt: new Date(),
      } as never);
    }
    const violations = await findViolations(t);
    for (const what of [/refundable 100, captured - refunded - in flight = 2500/, /1 captures and 1 voids at the provider/]) {
      expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(what)]));
    }
  });
  it("a refund's reversal journal, the refund, its provider refund or the payment in another currency: flagged", async () => {
    const refund = await t
      .http()
      .post(`/v1/orders/${orderId}/refunds`)
      .set(auth())
      .set('Idempotency-Key', 'k-refund')
      .send({ amountMinor: 100, reason: 'requested_by_customer' })
      .expect(201);
    expect(await findViolations(t)).toEqual([]);
    // Only the reversal's lines: the sale stays right, so the rule that flags it is the reversal's currency.
    await t.db.collection('ledger_entries').updateMany({ journalId: `jrn_${refund.body.id}` }, { $set: { currency: 'EUR' } });
    expect(await findViolations(t)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`order ${orderId}: journal in another currency or tenant`))]),
    );
    await t.db.collection('ledger_entries').updateMany({}, { $set: { currency: 'USD' } });
    await t.db.collection('refunds').updateMany({}, { $set: { currency: 'EUR' } });
    await t.simulatorDb.collection('operations').updateMany({ kind: 'refund' }, { $set: { currency: 'EUR' } });
    await t.db.collection('payments').updateMany({ orderId }, { $set: { currency: 'EUR' } });
    const violations = await findViolations(t);
    for (const what of [
      new RegExp(`refund ${refund.body.id} of 100 EUR, the order is in USD`),
      /provider refund \S+ in EUR, the order is in USD/,
      /does not match its charge/,
    ]) {
      expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(what)]));
    }
  });

  it('a manual capture whose payment, provider capture or journal is in another currency or amount: flagged', async () => {
    const created = await t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', 'k-manual')
      .send(orderBody({ currency: 'JPY', capture: 'manual' }))
      .expect(201);
    const id = created.body.id as string;
    await t.http().post(`/v1/orders/${id}/capture`).set(auth()).set('Idempotency-Key', 'k-capture').send({ amountMinor: 2000 }).expect(200);
    expect(await manualCaptureViolations(t.db, t.simulatorDb)).toEqual([]);
    await t.db.collection('ledger_entries').updateMany({ orderId: id }, { $set: { currency: 'USD' } });
    await t.db.collection('payments').updateMany({ orderId: id }, { $set: { amountMinor: 2501 } });
    await t.simulatorDb.collection('operations').updateMany({ kind: 'capture' }, { $set: { currency: 'USD' } });
    const violations = await manualCaptureViolations(t.db, t.simulatorDb);
    for (const what of [/4 journal lines in USD/, /payment \S+ of 2501 JPY, the order 2500 JPY/, /provider capture in USD/]) {
      expect(violations).toEqual(expect.arrayContaining([expect.stringMatching(what)]));
    }
  });
});
