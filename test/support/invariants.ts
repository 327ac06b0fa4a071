import type { Db } from 'mongodb';

interface OrderDoc {
  _id: string;
  tenant: string;
  state: string;
  amountMinor: number;
  paymentId: string | null;
  idempotency: { recordId: string; attempt: number };
  createdAt: Date;
}

interface RecordDoc {
  _id: string;
  tenant: string;
  operation: string;
  clientKey: string;
  status: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface InvariantInput {
  db: Db;
  simulatorDb: Db;
  /** Order ids a client received a 2xx for: they must exist, saved. */
  acknowledgedOrderIds?: string[];
  /** After the reaper deadline nothing may be left pending. */
  requireSettled?: boolean;
  /** The clock the service ran on (tests that move time); default: now. */
  now?: Date;
}

/** What the promise is about: one (tenant, operation, client key), whatever record id or schema version holds it. */
export function scopeOf(record: Pick<RecordDoc, 'tenant' | 'operation' | 'clientKey'>): string {
  return JSON.stringify([record.tenant, record.operation, record.clientKey]);
}

/**
 * The promise of the service, checked on the database itself:
 * per key scope (tenant, operation, client key - not per record id, so two
 * records of one key are caught) at most one live record, at most one live
 * order and at most one provider charge; every charge recorded once; every
 * saved order has one balanced journal and one outbox event; failed orders
 * have no charge and no journal; acknowledged orders exist. Returns the
 * violations (empty when all hold).
 */
export async function findViolations(input: InvariantInput): Promise<string[]> {
  const { db, simulatorDb } = input;
  const violations: string[] = [];
  const orders = await db.collection<OrderDoc>('orders').find({}).toArray();
  const records = await db.collection<RecordDoc>('idempotency_records').find({}).toArray();
  // Canceled keys (the reaper's tombstones) are not charges.
  const charges = await simulatorDb.collection<{ _id: string; amountMinor: number }>('charges').find({ status: 'succeeded' }).toArray();
  const chargeByOrder = new Map(charges.map((charge) => [charge._id.replace(/^charge:/, ''), charge]));

  const now = input.now ?? new Date();
  const recordsByScope = groupBy(records, scopeOf);
  for (const [scope, scopeRecords] of recordsByScope) {
    const live = scopeRecords.filter((record) => record.status === 'pending' || record.expiresAt > now);
    if (live.length > 1) violations.push(`key ${scope}: ${live.length} live idempotency records (${live.map((r) => r._id).join(', ')})`);
  }
  const recordById = new Map(records.map((record) => [record._id, record]));
  const ordersByScope = new Map<string, OrderDoc[]>();
  for (const order of orders) {
    const record = recordById.get(order.idempotency.recordId);
    if (!record) {
      violations.push(`order ${order._id}: its idempotency record ${order.idempotency.recordId} is missing`);
      continue;
    }
    // A key reused after its retention is a new window: only orders of the current window count together.
    const windowStart = Math.min(...recordsByScope.get(scopeOf(record))!.map((r) => r.createdAt.getTime()));
    if (order.createdAt.getTime() < windowStart) continue;
    const scope = scopeOf(record);
    ordersByScope.set(scope, [...(ordersByScope.get(scope) ?? []), order]);
  }
  for (const [scope, keyOrders] of ordersByScope) {
    const live = keyOrders.filter((order) => order.state !== 'failed');
    if (live.length > 1) violations.push(`key ${scope}: ${live.length} live orders`);
    const charged = keyOrders.filter((order) => chargeByOrder.has(order._id));
    if (charged.length > 1) violations.push(`key ${scope}: ${charged.length} provider charges`);
  }

  for (const order of orders) {
    const charge = chargeByOrder.get(order._id);
    const payments = await db.collection('payments').countDocuments({ orderId: order._id });
    const entries = await db
      .collection<{ direction: string; amountMinor: number; journalId: string }>('ledger_entries')
      .find({ orderId: order._id })
      .toArray();
    const events = await db.collection('outbox_events').countDocuments({ 'payload.id': order._id, type: 'order.completed' });
    if (order.state === 'failed') {
      if (charge) violations.push(`order ${order._id}: failed but charged at the provider`);
      if (payments || entries.length || events) violations.push(`order ${order._id}: failed but has payments/ledger/events`);
      continue;
    }
    if (charge && charge.amountMinor !== order.amountMinor) violations.push(`order ${order._id}: charge amount differs`);
    if (order.state === 'charged' || order.state === 'saved') {
      if (!charge) violations.push(`order ${order._id}: ${order.state} without a provider charge`);
      if (payments !== 1) violations.push(`order ${order._id}: ${payments} payment documents`);
    }
    if (order.state === 'saved') {
      const journals = new Set(entries.map((entry) => entry.journalId));
      const balance = entries.reduce((sum, e) => sum + (e.direction === 'debit' ? e.amountMinor : -e.amountMinor), 0);
      if (journals.size !== 1 || entries.length === 0) violations.push(`order ${order._id}: ${journals.size} journals`);
      if (balance !== 0) violations.push(`order ${order._id}: journal off by ${balance}`);
      if (events !== 1) violations.push(`order ${order._id}: ${events} order.completed events`);
    } else if (entries.length || events) {
      violations.push(`order ${order._id}: ${order.state} but already has ledger/events`);
    }
    if (input.requireSettled && (order.state === 'pending' || order.state === 'charged')) {
      violations.push(`order ${order._id}: still ${order.state}`);
    }
  }
  for (const charge of charges) {
    if (!orders.some((order) => order._id === charge._id.replace(/^charge:/, ''))) violations.push(`charge ${charge._id}: no order`);
  }
  for (const id of input.acknowledgedOrderIds ?? []) {
    const order = orders.find((candidate) => candidate._id === id);
    if (!order || order.state !== 'saved') violations.push(`acknowledged order ${id}: ${order ? order.state : 'missing'}`);
  }
  if (input.requireSettled) {
    const pending = await db.collection('idempotency_records').countDocuments({ status: 'pending' });
    if (pending) violations.push(`${pending} idempotency records still pending`);
  }
  return violations;
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
