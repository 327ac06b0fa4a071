// The conformance kit's refund rows against the built service as a real
// process, and what they leave in the store: the kit judges the answers (and
// the order's GET); this file checks the database behind them - one refund
// per key, nothing written for another amount or past the captured amount,
// the books and the provider in step (test/support/invariants.ts).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MongoClient } from 'mongodb';
import { ROW_IDS, runConformance, type Report, type RowId } from '@idempotent-orders/idempotency-conformance';
import { findViolations } from '../support/invariants.js';
import {
  ACME_SECRET,
  connectMongo,
  databasesOf,
  emptyDatabases,
  killAllServices,
  startService,
  type Databases,
  type ServiceProcess,
} from '../support/service-process.js';

const REFUND_ROWS: RowId[] = ['refund-replay', 'refund-other-body', 'refund-concurrent-duplicates', 'refund-over-capture'];
/** test/clients/conformance.e2e-spec.ts runs every row; here only the refund rows, for the store behind them. */
const OTHER_ROWS = Object.fromEntries(ROW_IDS.filter((id) => !REFUND_ROWS.includes(id)).map((id) => [id, 'not this file']));

interface RefundDoc {
  _id: string;
  orderId: string;
  state: string;
  amountMinor: number;
}

describe("the conformance kit's refund rows, and the store behind them", () => {
  let mongo: MongoClient;
  let service: ServiceProcess;
  let dbs: Databases;
  let report: Report;

  beforeAll(async () => {
    mongo = await connectMongo();
    service = await startService({ label: 'conformance-refunds', env: { API_KEYS: `acme:${ACME_SECRET}:orders+admin` } });
    dbs = databasesOf(mongo, service);
    report = await runConformance({
      baseUrl: service.baseUrl,
      token: ACME_SECRET,
      skip: OTHER_ROWS,
      refundPath: '/v1/orders/{id}/refunds',
      resourcePath: '/v1/orders/{id}',
    });
  });
  afterAll(async () => {
    await killAllServices();
    if (dbs) await emptyDatabases(dbs);
    await mongo?.close();
  });

  /** The one order a row created to refund (its create key is conformance-<run>-<label>-<uuid>). */
  async function orderOf(label: string) {
    const orders = await dbs.db.collection('orders').find({ tenant: 'acme' }).toArray();
    const mine = orders.filter((order) => String(order.idempotency?.recordId).includes(`conformance-${report.runId}-${label}-`));
    expect(mine).toHaveLength(1);
    return mine[0] as unknown as { _id: string; capturedMinor: number; refundedMinor: number; state: string };
  }
  const refundsOf = (orderId: string) => dbs.db.collection<RefundDoc>('refunds').find({ orderId }).toArray();

  it('passes the four refund rows', () => {
    const rows = report.rows.filter((row) => REFUND_ROWS.includes(row.id as RowId));
    expect(rows.map((row) => [row.id, row.status, row.status === 'PASS' ? '' : row.reason])).toEqual(
      REFUND_ROWS.map((id) => [id, 'PASS', '']),
    );
  });

  it('replay and another amount: one refund of 10 on that order, nothing for the other amount', async () => {
    const order = await orderOf('refund-target');
    const refunds = await refundsOf(order._id);
    expect(refunds.map((refund) => [refund.state, refund.amountMinor])).toEqual([['succeeded', 10]]);
    expect(order).toMatchObject({ refundedMinor: 10, state: 'partially_refunded' });
  });

  it('concurrent copies of one keyed refund: one refund in the store', async () => {
    const order = await orderOf('refund-concurrent-target');
    expect((await refundsOf(order._id)).map((refund) => [refund.state, refund.amountMinor])).toEqual([['succeeded', 10]]);
    expect(order.refundedMinor).toBe(10);
  });

  it('over capture: the first refund alone (51 of 100), the refused one wrote nothing that refunds', async () => {
    const order = await orderOf('refund-over-target');
    const refunds = await refundsOf(order._id);
    expect(refunds.filter((refund) => refund.state === 'succeeded').map((refund) => refund.amountMinor)).toEqual([51]);
    expect(refunds.filter((refund) => refund.state === 'pending')).toEqual([]);
    expect(order).toMatchObject({ capturedMinor: 100, refundedMinor: 51 });
  });

  it('leaves the books, the orders and the provider in step', async () => {
    expect(await findViolations(dbs)).toEqual([]);
  });
});
