import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ACCOUNTS } from '../../src/ledger/journal.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import { findViolations } from '../support/invariants.js';
import { reconcileCli } from '../support/reconcile-cli.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const DB_NAME = 'test_settlement_capture';
/** The re-check horizon of this file's app and CLI: max(lease, resume window) + the reaper's interval, 1.2 s here. */
const RECHECK_ENV = { IDEMPOTENCY_LOCK_TIMEOUT_MS: '1000', IDEMPOTENCY_RESUME_WINDOW_MS: '0', REAPER_INTERVAL_MS: '200' };

/**
 * Settlement reconciliation of manual captures: the provider's statement
 * lists a capture at its capture time for the captured amount, net of its
 * refunds, so clean books with full and partial captures (one refunded)
 * report nothing - in the service and from `npm run reconcile` (exit 0) -
 * while a real mismatch on a capture is still reported.
 */
describe('settlement reconciliation of manual captures', () => {
  let t: TestApp;
  let reconciliation: SettlementReconciliation;
  let keySeq = 0;
  const hourAround = () => ({ from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 3600_000) });

  beforeAll(async () => {
    t = await startApp({ dbName: DB_NAME, env: RECHECK_ENV });
    reconciliation = t.app.get(SettlementReconciliation);
  });
  beforeEach(() => t.reset());
  afterAll(async () => t.close());

  const key = () => `recon-capture-${++keySeq}`;

  async function authorize(amountMinor = 2500): Promise<string> {
    const body = orderBody({ capture: 'manual', items: [{ sku: 'sku_1', quantity: 1, unitPriceMinor: amountMinor }] });
    const res = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key()).send(body).expect(201);
    expect(res.body.state).toBe('authorized');
    return res.body.id as string;
  }
  const capture = (id: string, amountMinor?: number) =>
    t
      .http()
      .post(`/v1/orders/${id}/capture`)
      .set(auth())
      .set('Idempotency-Key', key())
      .send(amountMinor === undefined ? {} : { amountMinor })
      .expect(200);
  const refund = (id: string, amountMinor: number) =>
    t
      .http()
      .post(`/v1/orders/${id}/refunds`)
      .set(auth())
      .set('Idempotency-Key', key())
      .send({ amountMinor, reason: 'requested_by_customer' })
      .expect(201);

  /** A card order, a full capture, a partial capture (1000 of 2500) and a partial capture refunded in part (600 of 1500). */
  async function books(): Promise<{ card: string; full: string; partial: string; refunded: string }> {
    const card = (await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key()).send(orderBody()).expect(201)).body
      .id as string;
    const full = await authorize();
    await capture(full);
    const partial = await authorize();
    await capture(partial, 1000);
    const refunded = await authorize();
    await capture(refunded, 1500);
    await refund(refunded, 600);
    return { card, full, partial, refunded };
  }

  it('clean books with full and partial captures (one refunded) report nothing; npm run reconcile exits 0', async () => {
    const { full, partial, refunded } = await books();
    // The store as the books say: captured amounts, the refund, each clearing account net of its refunds.
    const orders = t.db.collection('orders');
    expect(await orders.findOne({ _id: full as never })).toMatchObject({ state: 'captured', capturedMinor: 2500, refundedMinor: 0 });
    expect(await orders.findOne({ _id: partial as never })).toMatchObject({ state: 'captured', capturedMinor: 1000 });
    expect(await orders.findOne({ _id: refunded as never })).toMatchObject({ capturedMinor: 1500, refundedMinor: 600 });
    const charges = t.simulatorDb.collection('charges');
    expect(await charges.findOne({ _id: chargeKeyFor(refunded) as never })).toMatchObject({
      status: 'captured',
      amountMinor: 2500,
      capturedMinor: 1500,
      refundedMinor: 600,
      capturedAt: expect.any(Date),
    });
    expect(await findViolations({ db: t.db, simulatorDb: t.simulatorDb })).toEqual([]);

    const { from, to } = hourAround();
    const report = await reconciliation.run(from, to);
    expect(report.mismatches).toEqual([]);
    expect(report).toMatchObject({ compared: 4, matched: 4 });
    expect(report.counts).toEqual({ missing_in_ledger: 0, missing_at_provider: 0, amount_differs: 0 });

    const run = await reconcileCli(DB_NAME, from, to, RECHECK_ENV);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ compared: 4, matched: 4, mismatches: [] });
  });

  it('a capture counts at its capture time: a period that holds the authorization but not the capture lists nothing of it', async () => {
    const id = await authorize();
    const authorizedBy = new Date();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const capturedFrom = new Date();
    await capture(id, 2000);
    const before = await reconciliation.run(new Date(authorizedBy.getTime() - 60_000), capturedFrom);
    expect(before).toMatchObject({ compared: 0, mismatches: [] });
    const after = await reconciliation.run(capturedFrom, new Date(Date.now() + 60_000));
    expect(after).toMatchObject({ compared: 1, matched: 1, mismatches: [] });
  });

  it('a real mismatch on a capture is still reported: another amount captured at the provider, a capture missing from the ledger', async () => {
    const { full, partial } = await books();
    // The provider captured 900 where the ledger booked 1000; the ledger lost the full capture's journal.
    await t.simulatorDb.collection('charges').updateOne({ _id: chargeKeyFor(partial) as never }, { $set: { capturedMinor: 900 } });
    const dropped = await t.db.collection('ledger_entries').deleteMany({ orderId: full, account: ACCOUNTS.providerClearing });
    expect(dropped.deletedCount).toBe(1);
    const { from, to } = hourAround();
    const report = await reconciliation.run(from, to);
    expect(report.mismatches.map((m) => [m.orderId, m.kind, m.ledgerMinor, m.providerMinor]).sort()).toEqual(
      [
        [full, 'missing_in_ledger', null, 2500],
        [partial, 'amount_differs', 1000, 900],
      ].sort(),
    );
    const run = await reconcileCli(DB_NAME, from, to, RECHECK_ENV);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ counts: { missing_in_ledger: 1, missing_at_provider: 0, amount_differs: 1 } });
  });
});
