import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ACCOUNTS } from '../../src/ledger/journal.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { chargeKeyFor } from '../../src/payments/payment.js';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import type { SimulatedPaymentGateway } from '../../src/payment-simulator/simulated-payment.gateway.js';
import { reconcileCli } from '../support/reconcile-cli.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';
import { deliver, eventFor, newWebhookSecret } from '../support/webhooks.js';

const PROCESSING_BOUND_MS = 1000;
const DB_NAME = 'test_settlement';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A short re-check horizon (max(lease, resume window) + the reaper's interval) for the app and the CLI: a mismatch is read twice. */
const RECHECK_ENV = { IDEMPOTENCY_LOCK_TIMEOUT_MS: '1000', IDEMPOTENCY_RESUME_WINDOW_MS: '0', REAPER_INTERVAL_MS: '100' };

/**
 * Settlement reconciliation: the ledger's provider clearing account against
 * the provider's charges for a period - clean books report nothing; each
 * kind of mismatch is reported once; the scheduled pass sets the metric
 * the alert reads; `npm run reconcile -- --from --to` prints the same
 * report and exits 1 on mismatches.
 */
describe('settlement reconciliation', () => {
  let t: TestApp;
  let reconciliation: SettlementReconciliation;
  let gateway: SimulatedPaymentGateway;
  const secret = newWebhookSecret();
  let keySeq = 0;
  const hourAround = () => ({ from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 3600_000) });

  beforeAll(async () => {
    t = await startApp({
      dbName: DB_NAME,
      env: { WEBHOOK_SECRETS: secret, PROCESSING_BOUND_MS: String(PROCESSING_BOUND_MS), ...RECHECK_ENV },
    });
    reconciliation = t.app.get(SettlementReconciliation);
    gateway = t.app.get(PaymentGateway) as SimulatedPaymentGateway;
  });
  beforeEach(async () => {
    await t.reset();
    await t.db.collection('webhook_inbox').deleteMany({});
  });
  afterAll(async () => t.close());

  const create = (token: string) =>
    t
      .http()
      .post('/v1/orders')
      .set(auth())
      .set('Idempotency-Key', `settle-${++keySeq}`)
      .send(orderBody({ paymentMethod: { token } }));

  /** Two card orders, an asynchronous one settled by webhook, one declined by webhook, one still processing. */
  async function books(): Promise<string[]> {
    const saved = [(await create('tok_visa').expect(201)).body.id, (await create('tok_visa').expect(201)).body.id];
    for (const outcome of ['succeeded', 'declined', null] as const) {
      const id = (await create('tok_async').expect(202)).body.id;
      if (!outcome) continue;
      await gateway.settleProcessing(chargeKeyFor(id), outcome);
      const type = outcome === 'succeeded' ? 'charge.succeeded' : 'charge.failed';
      await deliver(t, secret, await eventFor(t.simulatorDb, chargeKeyFor(id), type)).expect(200);
      if (outcome === 'succeeded') saved.push(id);
    }
    return saved;
  }

  it('reports nothing when the clearing account and the provider agree (sync, async settled, declined, processing)', async () => {
    const saved = await books();
    const { from, to } = hourAround();
    const report = await reconciliation.run(from, to);
    expect(report).toMatchObject({ compared: 3, matched: 3, mismatches: [] });
    expect(report.counts).toEqual({ missing_in_ledger: 0, missing_at_provider: 0, amount_differs: 0 });
    expect(saved).toHaveLength(3);
  });

  it('reports a charge missing in the ledger, a clearing line missing at the provider and an amount that differs', async () => {
    const [first] = await books();
    const stranger = 'ord_0123456789abcdef01234567';
    const orphan = 'ord_fedcba9876543210fedcba98';
    await t.simulatorDb.collection('charges').insertOne({
      _id: chargeKeyFor(stranger) as never,
      status: 'succeeded',
      id: 'ch_stranger',
      amountMinor: 700,
      currency: 'USD',
      createdAt: new Date(),
    });
    await t.db.collection('ledger_entries').insertOne({
      _id: `jrn_${orphan}:3` as never,
      tenant: 'acme',
      journalId: `jrn_${orphan}`,
      orderId: orphan,
      line: 3,
      account: ACCOUNTS.providerClearing,
      direction: 'debit',
      amountMinor: 900,
      currency: 'USD',
      postedAt: new Date(),
    });
    await t.simulatorDb.collection('charges').updateOne({ _id: chargeKeyFor(first) as never }, { $set: { amountMinor: 2400 } });
    const { from, to } = hourAround();
    const report = await reconciliation.run(from, to);
    expect(report.mismatches.map((m) => [m.orderId, m.kind, m.ledgerMinor, m.providerMinor]).sort()).toEqual(
      [
        [stranger, 'missing_in_ledger', null, 700],
        [orphan, 'missing_at_provider', 900, null],
        [first, 'amount_differs', 2500, 2400],
      ].sort(),
    );
    expect(report.counts).toEqual({ missing_in_ledger: 1, missing_at_provider: 1, amount_differs: 1 });

    // The scheduled pass covers the day that ended one processing bound ago, and sets the metric the alert reads.
    await sleep(PROCESSING_BOUND_MS + 100);
    const scheduled = await reconciliation.runScheduled();
    expect(scheduled.counts).toEqual({ missing_in_ledger: 1, missing_at_provider: 1, amount_differs: 1 });
    const metrics = await t.app.get(MetricsService).registry.getSingleMetricAsString('settlement_reconciliation_mismatches');
    expect(metrics).toContain('settlement_reconciliation_mismatches{kind="missing_in_ledger"} 1');
    expect(metrics).toContain('settlement_reconciliation_mismatches{kind="amount_differs"} 1');

    // The same report from the command line (npm run reconcile -- --from --to), exit 1 for mismatches.
    const run = await reconcileCli(DB_NAME, from, to, RECHECK_ENV);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({
      compared: 5,
      counts: { missing_in_ledger: 1, missing_at_provider: 1, amount_differs: 1 },
    });
  });
});
