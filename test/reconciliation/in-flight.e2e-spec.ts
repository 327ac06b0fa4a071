import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import type { ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { findViolations } from '../support/invariants.js';
import { auth, orderBody, type TestApp } from '../support/test-app.js';

/** The re-check horizon here: max(lease 1 s, resume window 0) + the reaper's interval 200 ms. */
const ENV = { IDEMPOTENCY_LOCK_TIMEOUT_MS: '1000', IDEMPOTENCY_RESUME_WINDOW_MS: '0', REAPER_INTERVAL_MS: '200' };
const RECHECK_MS = 1200;

/**
 * Settlement reconciliation while money is moving: a refund the provider
 * made whose T1 has not committed (a crash at after-refund-provider, until
 * the reaper), or a capture likewise, is reported apart as `in_flight`,
 * never as a mismatch; once the reaper finished it the books match. A
 * mismatch is re-checked once, after the reaper's horizon, before it is
 * reported: one that the horizon resolves is not reported, one that stays is.
 */
describe('settlement reconciliation with work in flight', () => {
  let app: ControlledApp;
  let t: TestApp;
  let faults: ThrowingFaultInjector;
  let reaper: IdempotencyReaper;
  let reconciliation: SettlementReconciliation;
  let seq = 0;
  const hourAround = () => ({ from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 3600_000) });

  beforeAll(async () => {
    app = await startControlledApp({ dbName: 'test_settlement_in_flight', env: ENV });
    ({ t, faults, reaper } = app);
    reconciliation = t.app.get(SettlementReconciliation);
  });
  beforeEach(async () => app.reset());
  afterAll(async () => t.close());

  const key = () => `in-flight-${++seq}`;
  const create = async (body = orderBody()) =>
    (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key()).send(body).expect(201)).body.id as string;

  it('a refund made at the provider, its T1 not committed: in_flight, not amount_differs; after the reaper the books match', async () => {
    const paid = await create();
    faults.crashOnceAt('after-refund-provider');
    await t
      .http()
      .post(`/v1/orders/${paid}/refunds`)
      .set(auth())
      .set('Idempotency-Key', key())
      .send({ amountMinor: 400, reason: 'requested_by_customer' })
      .expect(500);
    // The provider refunded 400; our books have the reservation, the refund pending, no reversal journal yet.
    expect(await t.simulatorDb.collection('charges').findOne({ _id: chargeKeyFor(paid) as never })).toMatchObject({ refundedMinor: 400 });
    expect(await t.db.collection('orders').findOne({ _id: paid as never })).toMatchObject({ refundedMinor: 0, refundableMinor: 2100 });
    expect(await t.db.collection('refunds').findOne({ orderId: paid })).toMatchObject({ state: 'pending' });

    const { from, to } = hourAround();
    const during = await reconciliation.run(from, to);
    expect(during.mismatches).toEqual([]);
    expect(during.inFlight).toEqual([
      expect.objectContaining({ orderId: paid, reason: 'refund_in_flight', ledgerMinor: 2500, providerMinor: 2100 }),
    ]);
    expect(during.counts).toEqual({ missing_in_ledger: 0, missing_at_provider: 0, amount_differs: 0 });

    await app.expireLeases();
    expect(await reaper.runOnce()).toMatchObject({ completed: 1 });
    const after = await reconciliation.run(from, to);
    expect(after).toMatchObject({ compared: 1, matched: 1, mismatches: [], inFlight: [] });
    // One reversal, booked by the reaper: nothing a runbook should add.
    expect(await t.db.collection('ledger_entries').distinct('journalId', { orderId: paid })).toEqual([
      `jrn_${paid}`,
      expect.stringMatching(/^jrn_re_/),
    ]);
    expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb })).toEqual([]);
  });

  it('a capture made at the provider, its T1 not committed: in_flight (the order holds a pendingAction), not missing_in_ledger', async () => {
    const authorized = await create(orderBody({ capture: 'manual' }));
    faults.crashOnceAt('after-capture-provider');
    await t
      .http()
      .post(`/v1/orders/${authorized}/capture`)
      .set(auth())
      .set('Idempotency-Key', key())
      .send({ amountMinor: 1000 })
      .expect(500);
    expect(await t.db.collection('orders').findOne({ _id: authorized as never })).toMatchObject({
      state: 'authorized',
      pendingAction: expect.objectContaining({ kind: 'capture' }),
    });
    const { from, to } = hourAround();
    const during = await reconciliation.run(from, to);
    expect(during.mismatches).toEqual([]);
    expect(during.inFlight).toEqual([
      expect.objectContaining({ orderId: authorized, reason: 'action_in_flight', ledgerMinor: null, providerMinor: 1000 }),
    ]);
    await app.expireLeases();
    expect(await reaper.runOnce()).toMatchObject({ completed: 1 });
    expect(await reconciliation.run(from, to)).toMatchObject({ matched: 1, mismatches: [], inFlight: [] });
  });

  it('a mismatch is re-checked once after the horizon: one resolved meanwhile is not reported, one that stays is', async () => {
    const [healed, wrong] = [await create(), await create()];
    const charges = t.simulatorDb.collection('charges');
    await charges.updateMany({ _id: { $in: [chargeKeyFor(healed), chargeKeyFor(wrong)] as never[] } }, { $set: { amountMinor: 2400 } });
    const { from, to } = hourAround();
    const started = Date.now();
    const running = reconciliation.run(from, to);
    // Whatever brought the first read its mismatch (a commit not yet visible, a worker the reaper finishes) is gone by the re-check.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await charges.updateOne({ _id: chargeKeyFor(healed) as never }, { $set: { amountMinor: 2500 } });
    const report = await running;
    expect(Date.now() - started).toBeGreaterThanOrEqual(RECHECK_MS);
    expect(report.mismatches.map((m) => [m.orderId, m.kind, m.ledgerMinor, m.providerMinor])).toEqual([
      [wrong, 'amount_differs', 2500, 2400],
    ]);
    expect(report).toMatchObject({ compared: 2, matched: 1, rechecked: 2, inFlight: [] });
  });
});
