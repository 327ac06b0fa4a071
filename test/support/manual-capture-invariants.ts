import type { Db } from 'mongodb';
import { paidOrderJournal } from '../../src/ledger/journal.js';

/*
 * The promise of manual capture, checked on the database and the provider's
 * own documents (the create's checker, invariants.ts, covers automatic
 * orders and orders.create records only): per order, what the provider
 * holds, our payment, the ledger and the events agree with the order's
 * state; refunded <= captured <= authorized; at most one capture or void
 * succeeded per authorization; the journal is the captured amount; every
 * capture/void record agrees with the order it acted on.
 */

interface OrderDoc {
  _id: string;
  state: string;
  capture?: string;
  currency: string;
  amountMinor: number;
  authorizedMinor: number;
  capturedMinor: number;
  refundedMinor: number;
  paymentId: string | null;
  pendingAction?: { kind: string; recordId: string; claimId: string; amountMinor: number } | null;
}

interface RecordDoc {
  _id: string;
  operation: string;
  status: string;
  response: { status: number } | null;
}

const ACTION_OPERATIONS = ['orders.capture', 'orders.void'];

export async function manualCaptureViolations(db: Db, simulatorDb: Db): Promise<string[]> {
  const orders = await db.collection<OrderDoc>('orders').find({ capture: 'manual' }).toArray();
  const payments = await db
    .collection<{ orderId: string; _id: string; status: string; amountMinor: number; currency: string; capturedMinor?: number }>('payments')
    .find({})
    .toArray();
  const entries = await db
    .collection<{ orderId: string; account: string; direction: string; amountMinor: number; currency: string }>('ledger_entries')
    .find({})
    .toArray();
  const events = await db.collection<{ aggregateId: string; type: string }>('outbox_events').find({}).toArray();
  const charges = await simulatorDb
    .collection<{ _id: string; status: string; amountMinor: number; currency: string; capturedMinor?: number }>('charges')
    .find({})
    .toArray();
  const operations = await simulatorDb
    .collection<{ _id: string; kind: string | null; status: string; chargeKey: string | null; amountMinor: number; currency: string }>(
      'operations',
    )
    .find({})
    .toArray();
  const records = await db
    .collection<RecordDoc>('idempotency_records')
    .find({ operation: { $in: ACTION_OPERATIONS } })
    .toArray();

  const out: string[] = [];
  const line = (l: { account: string; direction: string; amountMinor: number }) => `${l.account}/${l.direction}/${l.amountMinor}`;
  for (const order of orders) {
    const where = `order ${order._id} (${order.state})`;
    const charge = charges.find((candidate) => candidate._id === `charge:${order._id}`);
    const payment = payments.filter((candidate) => candidate.orderId === order._id);
    const journal = entries
      .filter((entry) => entry.orderId === order._id)
      .map(line)
      .sort();
    const types = events
      .filter((event) => event.aggregateId === order._id)
      .map((event) => event.type)
      .sort();
    const succeeded = operations.filter(
      (op) => op.chargeKey === `charge:${order._id}` && op.status === 'succeeded' && (op.kind === 'capture' || op.kind === 'void'),
    );
    if (!(
      order.refundedMinor <= order.capturedMinor &&
      order.capturedMinor <= order.authorizedMinor &&
      order.authorizedMinor <= order.amountMinor
    ))
      out.push(
        `${where}: refunded ${order.refundedMinor} / captured ${order.capturedMinor} / authorized ${order.authorizedMinor} out of order`,
      );
    if (succeeded.length > 1) out.push(`${where}: ${succeeded.length} captures/voids succeeded at the provider`);
    // Amount and currency: the payment, the provider's charge and operations and every journal line are the order's.
    for (const p of payment.filter((candidate) => candidate.amountMinor !== order.amountMinor || candidate.currency !== order.currency))
      out.push(`${where}: payment ${p._id} of ${p.amountMinor} ${p.currency}, the order ${order.amountMinor} ${order.currency}`);
    if (charge && (charge.amountMinor !== order.amountMinor || charge.currency !== order.currency))
      out.push(`${where}: the provider's charge is ${charge.amountMinor} ${charge.currency}`);
    const foreign = operations.filter(
      (op) => op.chargeKey === `charge:${order._id}` && op.status === 'succeeded' && op.currency !== order.currency,
    );
    if (foreign.length) out.push(`${where}: provider ${foreign.map((op) => `${op.kind} in ${op.currency}`).join(', ')}`);
    const lines = entries.filter((entry) => entry.orderId === order._id && entry.currency !== order.currency);
    if (lines.length) out.push(`${where}: ${lines.length} journal lines in ${[...new Set(lines.map((l) => l.currency))].join(', ')}`);
    const held = order.pendingAction ?? null;
    if (held && order.state !== 'authorized') out.push(`${where}: held by a ${held.kind} but not authorized`);
    if (held && !records.some((record) => record._id === held.recordId && record.status === 'pending'))
      out.push(`${where}: held by a ${held.kind} whose record is not pending`);
    const expect = (state: string, payments: string, journalOf: number, eventTypes: string[]) => {
      if (order.state !== state) return;
      if (payment.length !== 1 || payment[0].status !== payments)
        out.push(`${where}: payments ${JSON.stringify(payment.map((p) => p.status))}`);
      const expected = journalOf > 0 ? paidOrderJournal(journalOf).map(line).sort() : [];
      if (JSON.stringify(journal) !== JSON.stringify(expected)) out.push(`${where}: journal ${JSON.stringify(journal)}`);
      if (JSON.stringify(types) !== JSON.stringify(eventTypes)) out.push(`${where}: events ${JSON.stringify(types)}`);
    };
    expect('authorized', 'authorized', 0, []);
    expect('captured', 'captured', order.capturedMinor, ['order.captured']);
    expect('voided', 'voided', 0, ['order.voided']);
    expect('expired', 'expired', 0, ['order.expired']);
    const providerStatus: Record<string, string[]> = {
      authorized: ['authorized', 'voided'],
      captured: ['captured'],
      voided: ['voided'],
      expired: ['authorized'],
    };
    if (providerStatus[order.state] && !providerStatus[order.state].includes(charge?.status ?? 'absent'))
      out.push(`${where}: the provider's charge is ${charge?.status ?? 'absent'}`);
    if (order.state === 'captured') {
      if (charge?.capturedMinor !== order.capturedMinor) out.push(`${where}: the provider captured ${charge?.capturedMinor}`);
      if (payment[0]?.capturedMinor !== order.capturedMinor) out.push(`${where}: the payment says ${payment[0]?.capturedMinor} captured`);
      if (succeeded[0]?.kind !== 'capture' || succeeded[0].amountMinor !== order.capturedMinor)
        out.push(`${where}: no provider capture of ${order.capturedMinor}`);
    }
    if (order.state === 'voided' && succeeded[0]?.kind !== 'void') out.push(`${where}: no provider void`);
    if ((order.state === 'authorized' || order.state === 'expired') && succeeded.some((op) => op.kind === 'capture'))
      out.push(`${where}: captured at the provider`);
  }
  for (const record of records) {
    const where = `record ${record._id} (${record.status})`;
    if (record.status === 'complete' && record.response?.status !== 200) out.push(`${where}: stored ${record.response?.status}`);
    if (record.status === 'failed' && record.response && record.response.status < 400)
      out.push(`${where}: stored ${record.response.status}`);
    if (record.status !== 'pending' && orders.some((order) => order.pendingAction?.recordId === record._id))
      out.push(`${where}: still holds its order`);
  }
  return out;
}
