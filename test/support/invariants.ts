import type { Db } from 'mongodb';
import type { Payment } from '../../src/payments/payment.js';
import { tombstoneId, tombstoneScope } from '@idempotent-orders/nest-idempotency/testing';
import { ACCOUNTS, paidOrderJournal, refundJournal } from '../../src/ledger/journal.js';

interface OrderDoc {
  _id: string;
  tenant: string;
  customerId: string;
  state: string;
  currency: string;
  amountMinor: number;
  /** Absent on orders stored before manual capture and refunds existed: automatic, nothing refunded. */
  capture?: 'automatic' | 'manual';
  authorizedMinor?: number;
  capturedMinor?: number;
  refundedMinor?: number;
  refundableMinor?: number;
  failureReason: string | null;
  paymentId: string | null;
  idempotency: { recordId: string; attempt: number };
  stateHistory?: { saved?: Date; processing?: Date };
  createdAt: Date;
}

interface RecordDoc {
  _id: string;
  tenant: string;
  operation: string;
  clientKey: string;
  status: string;
  attempt: number;
  fingerprint: { algorithm: string; value: string };
  subject: string | null;
  response: { status: number; headers: Record<string, string> } | null;
  ttlSeconds: number;
  createdAt: Date;
  expiresAt: Date;
}

interface ChargeDoc {
  _id: string;
  id: string;
  status: string;
  amountMinor: number;
  currency: string;
  capturedMinor?: number;
}

/** A capture, void or refund at the provider (the simulator's operations collection). */
interface OperationDoc {
  _id: string;
  kind: 'capture' | 'void' | 'refund' | null;
  status: string;
  id: string;
  chargeKey: string | null;
  amountMinor: number;
  currency: string;
}

/** Our refunds collection. */
interface RefundDoc {
  _id: string;
  tenant: string;
  orderId: string;
  amountMinor: number;
  currency: string;
  state: string;
  failureReason: string | null;
  providerKey: string;
  providerRefundId: string | null;
  idempotency: { recordId: string; attempt: number };
}

/** A payments document as stored: the service's Payment, with any status (the checker flags one it never writes). */
type PaymentDoc = Omit<Payment, 'status' | 'createdAt'> & { status: string };

interface EntryDoc {
  tenant: string;
  journalId: string;
  orderId: string;
  account: string;
  direction: string;
  amountMinor: number;
  currency: string;
}

interface TombstoneDoc {
  _id: string;
  scope: string;
  status: number;
  location: string | null;
  subject: string | null;
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
  /** IDEMPOTENCY_TOMBSTONE_SECONDS of the service (default 30 days): how long an answered body stays refused. */
  tombstoneSeconds?: number;
}

const DEFAULT_TOMBSTONE_SECONDS = 2_592_000;

/** What the promise is about: one (tenant, operation, client key), whatever record id or schema version holds it. */
export function scopeOf(record: Pick<RecordDoc, 'tenant' | 'operation' | 'clientKey'>): string {
  return JSON.stringify([record.tenant, record.operation, record.clientKey]);
}

/** States whose money the provider took and our books hold: a sale journal, refunds or not. */
const TAKEN = ['saved', 'captured', 'partially_refunded', 'refunded'];
/** The create answered: every state but its own work in progress and failure. */
const isAnswered = (order: Pick<OrderDoc, 'state'>) => !['pending', 'charged', 'failed'].includes(order.state);
const capturedOf = (order: OrderDoc) => order.capturedMinor ?? (TAKEN.includes(order.state) ? order.amountMinor : 0);
const isSale = (entries: EntryDoc[]) => entries.some((entry) => entry.account === ACCOUNTS.revenue && entry.direction === 'credit');

/** Erasure leaves a pseudonym on orders and no subject on records. */
const isErasedOrder = (order: Pick<OrderDoc, 'customerId'>) => /^erased_/.test(order.customerId);

interface Store {
  orders: OrderDoc[];
  records: RecordDoc[];
  /** Money the provider took under a charge key: a charge, or an authorization it captured. */
  charges: ChargeDoc[];
  /** Authorizations the provider holds, voided or let lapse (nothing taken). */
  authorizations: ChargeDoc[];
  operations: OperationDoc[];
  refunds: RefundDoc[];
  payments: PaymentDoc[];
  entries: EntryDoc[];
  events: { _id: string; type: string; payload: { id: string; amountMinor?: number; state?: string } }[];
  tombstones: TombstoneDoc[];
}

async function load({ db, simulatorDb }: InvariantInput): Promise<Store> {
  return {
    orders: await db.collection<OrderDoc>('orders').find({}).toArray(),
    records: await db.collection<RecordDoc>('idempotency_records').find({}).toArray(),
    // Canceled keys (the reaper's cancel markers), declined and still processing charges took nothing.
    charges: await simulatorDb
      .collection<ChargeDoc>('charges')
      .find({ status: { $in: ['succeeded', 'captured'] } })
      .toArray(),
    authorizations: await simulatorDb
      .collection<ChargeDoc>('charges')
      .find({ status: { $in: ['authorized', 'voided'] } })
      .toArray(),
    operations: await simulatorDb.collection<OperationDoc>('operations').find({ status: 'succeeded' }).toArray(),
    refunds: await db.collection<RefundDoc>('refunds').find({}).toArray(),
    payments: await db.collection<PaymentDoc>('payments').find({}).toArray(),
    entries: await db.collection<EntryDoc>('ledger_entries').find({}).toArray(),
    events: await db.collection<Store['events'][number]>('outbox_events').find({}).toArray(),
    tombstones: await db.collection<TombstoneDoc>('idempotency_tombstones').find({}).toArray(),
  };
}

/**
 * The promise of the service, checked on the database itself (README,
 * "Tests"): per key scope (tenant, operation, client key - not per record
 * id, so two records of one key are caught) at most one live record and one
 * live order; across retention windows, as long as a tombstone lives, one
 * charge per answered body; every charge recorded once, with the charge's
 * amount and id; every saved order one balanced four-line journal of its
 * own amount and one outbox event; the provider's charges equal to the
 * ledger's clearing account; every record consistent with its order and
 * every final answer with its tombstone; failed orders without charge or
 * journal; nothing orphaned; acknowledged orders exist. Returns the
 * violations (empty when all hold).
 */
export async function findViolations(input: InvariantInput): Promise<string[]> {
  const store = await load(input);
  const now = input.now ?? new Date();
  const tombstoneMs = (input.tombstoneSeconds ?? DEFAULT_TOMBSTONE_SECONDS) * 1000;
  return [
    ...perKey(store, now, tombstoneMs),
    ...perOrder(store, input),
    ...perRecord(store, now, tombstoneMs),
    ...afterTheCharge(store),
    ...money(store),
    ...refunds(store, input),
    ...(input.requireSettled ? settled(store) : []),
  ];
}

/** The operation whose records, tombstones and orders perKey and perRecord check; refunds, captures and voids have their own. */
const CREATE = 'orders.create';
const REFUND_OPERATION = 'orders.refund';

function perKey(store: Store, now: Date, tombstoneMs: number): string[] {
  const violations: string[] = [];
  const recordsByScope = groupBy(
    store.records.filter((record) => record.operation === CREATE),
    scopeOf,
  );
  for (const [scope, scopeRecords] of recordsByScope) {
    const live = scopeRecords.filter((record) => record.status === 'pending' || record.expiresAt > now);
    if (live.length > 1) violations.push(`key ${scope}: ${live.length} live idempotency records (${live.map((r) => r._id).join(', ')})`);
  }
  const recordById = new Map(store.records.map((record) => [record._id, record]));
  const chargeByOrder = new Map(store.charges.map((charge) => [charge._id.replace(/^charge:/, ''), charge]));
  const ordersByScope = new Map<string, { record: RecordDoc; orders: OrderDoc[] }>();
  for (const order of store.orders) {
    const record = recordById.get(order.idempotency.recordId);
    if (!record) {
      violations.push(`order ${order._id}: its idempotency record ${order.idempotency.recordId} is missing`);
      continue;
    }
    const entry = ordersByScope.get(scopeOf(record)) ?? { record, orders: [] };
    entry.orders.push(order);
    ordersByScope.set(scopeOf(record), entry);
  }
  for (const [scope, { record, orders }] of ordersByScope) {
    // Live orders: a key reused after its retention is a new window, so only orders of the current window count together.
    const windowStart = Math.min(...recordsByScope.get(scope)!.map((r) => r.createdAt.getTime()));
    const live = orders.filter((order) => order.state !== 'failed' && order.createdAt.getTime() >= windowStart);
    if (live.length > 1) violations.push(`key ${scope}: ${live.length} live orders`);
    // Charges, across every window: each answered (saved) order is its body's one charge while its tombstone lives -
    // the tombstone is one document per (key, body), so two saved orders of one body cannot both be named by one.
    const digest = tombstoneScope(record);
    const tombs = store.tombstones.filter((tomb) => tomb.scope === digest || tomb._id.startsWith(`${digest}:`));
    const charged = orders.filter((order) => chargeByOrder.has(order._id));
    const unanswered = charged.filter((order) => !isAnswered(order));
    if (unanswered.length > 1) violations.push(`key ${scope}: ${unanswered.length} provider charges without an answer`);
    for (const order of charged.filter(isAnswered)) {
      const savedAt = (order.stateHistory?.saved ?? order.createdAt).getTime();
      // Its tombstone lives at least until retention (from the finish) plus the tombstone's own life.
      if (savedAt + record.ttlSeconds * 1000 + tombstoneMs <= now.getTime()) continue;
      const named = tombs.some((tomb) => tomb.location === `/v1/orders/${order._id}`);
      // An erased customer's tombstone stays, privacy-safe (issue 21): it names nobody, and may not name the order.
      const privacySafe = isErasedOrder(order) && tombs.some((tomb) => tomb.subject === null && tomb.expiresAt > now);
      if (!named && !privacySafe)
        violations.push(`key ${scope}: saved order ${order._id} has no tombstone, so a late retry of its body would charge again`);
    }
    if (charged.length > tombs.length + 1)
      violations.push(`key ${scope}: ${charged.length} provider charges, ${tombs.length} answered bodies`);
  }
  return violations;
}

function perOrder(store: Store, input: InvariantInput): string[] {
  const violations: string[] = [];
  const chargeByOrder = new Map(store.charges.map((charge) => [charge._id.replace(/^charge:/, ''), charge]));
  const authorizationByOrder = new Map(store.authorizations.map((charge) => [charge._id.replace(/^charge:/, ''), charge]));
  const paymentsByOrder = groupBy(store.payments, (payment) => payment.orderId);
  const entriesByOrder = groupBy(store.entries, (entry) => entry.orderId);
  const eventsByOrder = groupBy(
    store.events.filter((event) => event.type === 'order.completed'),
    (event) => event.payload.id,
  );
  for (const order of store.orders) {
    const charge = chargeByOrder.get(order._id);
    const payments = paymentsByOrder.get(order._id) ?? [];
    const entries = entriesByOrder.get(order._id) ?? [];
    // A compensation (`jrn_<refund>_failed`) credits revenue too, but it is no sale: it undoes a refund's reversal.
    const sales = [...groupBy(entries, (entry) => entry.journalId).values()].filter(
      (journal) => isSale(journal) && !journal[0].journalId.endsWith('_failed'),
    );
    const events = eventsByOrder.get(order._id) ?? [];
    const where = `order ${order._id}`;
    if (order.state === 'failed') {
      if (charge || authorizationByOrder.has(order._id)) violations.push(`${where}: failed but charged at the provider`);
      if (payments.length || entries.length || events.length) violations.push(`${where}: failed but has payments/ledger/events`);
      continue;
    }
    const manual = order.capture === 'manual';
    const captured = capturedOf(order);
    const refunded = order.refundedMinor ?? 0;
    const authorized = order.authorizedMinor ?? (captured > 0 ? order.amountMinor : 0);
    if (!(refunded <= captured && captured <= authorized && authorized <= order.amountMinor))
      violations.push(`${where}: refunded ${refunded} <= captured ${captured} <= authorized ${authorized} <= ${order.amountMinor} broken`);
    if (charge) {
      const taken = charge.capturedMinor ?? charge.amountMinor;
      if (charge.amountMinor !== order.amountMinor) violations.push(`${where}: charge amount differs`);
      if (charge.currency !== order.currency) violations.push(`${where}: charged in ${charge.currency}, the order is in ${order.currency}`);
      if (TAKEN.includes(order.state) && taken !== captured)
        violations.push(`${where}: the provider took ${taken}, the order says ${captured} captured`);
    }
    if (order.state === 'charged' || TAKEN.includes(order.state) || order.state === 'authorized' || order.state === 'voided') {
      if (!charge && !authorizationByOrder.has(order._id)) violations.push(`${where}: ${order.state} without a provider charge`);
      if (payments.length !== 1) violations.push(`${where}: ${payments.length} payment documents`);
      const atProvider = charge ?? authorizationByOrder.get(order._id);
      for (const payment of payments) {
        const same =
          atProvider &&
          payment.amountMinor === atProvider.amountMinor &&
          payment.amountMinor === order.amountMinor &&
          payment.providerChargeId === atProvider.id &&
          payment.chargeKey === atProvider._id &&
          payment.currency === order.currency &&
          payment.currency === atProvider.currency &&
          (payment.capturedMinor === undefined || !TAKEN.includes(order.state) || payment.capturedMinor === captured) &&
          payment.tenant === order.tenant &&
          order.paymentId === payment._id;
        if (!same)
          violations.push(`${where}: its payment ${payment._id} does not match its charge (amount, captured, id, key, currency, tenant)`);
      }
    }
    if (TAKEN.includes(order.state)) {
      if (sales.length !== 1) violations.push(`${where}: ${sales.length} sale journals`);
      for (const sale of sales) violations.push(...journalViolations(order, sale, paidOrderJournal(captured), 'the sale and settlement'));
      if (!manual) {
        if (events.length !== 1) violations.push(`${where}: ${events.length} order.completed events`);
        for (const event of events) {
          if (event.payload.amountMinor !== order.amountMinor || event.payload.state !== 'saved')
            violations.push(`${where}: its order.completed event says ${event.payload.amountMinor} ${event.payload.state}`);
        }
      } else if (events.length) {
        violations.push(`${where}: a manual capture with an order.completed event`);
      }
    } else if (entries.length || events.length) {
      violations.push(`${where}: ${order.state} but already has ledger/events`);
    }
    if (input.requireSettled && (order.state === 'pending' || order.state === 'charged')) violations.push(`${where}: still ${order.state}`);
  }
  const orderIds = new Set(store.orders.map((order) => order._id));
  for (const charge of [...store.charges, ...store.authorizations]) {
    if (!orderIds.has(charge._id.replace(/^charge:/, ''))) violations.push(`charge ${charge._id}: no order`);
  }
  for (const [orderId] of paymentsByOrder) if (!orderIds.has(orderId)) violations.push(`payment of order ${orderId}: no order`);
  for (const [orderId] of entriesByOrder) if (!orderIds.has(orderId)) violations.push(`ledger entries of order ${orderId}: no order`);
  for (const [orderId] of eventsByOrder) if (!orderIds.has(orderId)) violations.push(`event of order ${orderId}: no order`);
  for (const id of input.acknowledgedOrderIds ?? []) {
    const order = store.orders.find((candidate) => candidate._id === id);
    if (!order || !isAnswered(order)) violations.push(`acknowledged order ${id}: ${order ? order.state : 'missing'}`);
  }
  return violations;
}

/**
 * Refunds, captures and voids: what the provider did under each key
 * against our documents and our books. Provider refunds = succeeded
 * refunds = reversal journals, per order, in number and in amount; the
 * refundable amount is the captured one less every refund succeeded or in
 * flight; at most one capture or void per authorization.
 */
function afterTheCharge(store: Store): string[] {
  const violations: string[] = [];
  const byOrder = (chargeKey: string | null) => (chargeKey ?? '').replace(/^charge:/, '');
  const operationsByOrder = groupBy(store.operations, (operation) => byOrder(operation.chargeKey));
  const refundsByOrder = groupBy(store.refunds, (refund) => refund.orderId);
  const entriesByOrder = groupBy(store.entries, (entry) => entry.orderId);
  for (const order of store.orders) {
    const where = `order ${order._id}`;
    const operations = operationsByOrder.get(order._id) ?? [];
    const providerRefunds = operations.filter((operation) => operation.kind === 'refund');
    const refunds = refundsByOrder.get(order._id) ?? [];
    const succeeded = refunds.filter((refund) => refund.state === 'succeeded');
    const inFlight = refunds.filter((refund) => refund.state === 'pending');
    const journals = [...groupBy(entriesByOrder.get(order._id) ?? [], (entry) => entry.journalId).values()];
    // A refund the provider failed after it succeeded (refund-failure.ts): its reversal and the compensation
    // `jrn_<refund>_failed` net to nothing - both set aside, each checked against the other.
    const failedLate = new Set(
      refunds.filter((refund) => refund.failureReason === 'failed_at_provider').map((refund) => `jrn_${refund._id}`),
    );
    const netted = journals.filter((journal) => failedLate.has(journal[0].journalId.replace(/_failed$/, '')));
    for (const refundJournalId of failedLate) {
      const pair = netted.filter((journal) => journal[0].journalId.replace(/_failed$/, '') === refundJournalId);
      const byAccount = groupBy(pair.flat(), (entry) => entry.account);
      const net = [...byAccount.values()].map((entries) =>
        entries.reduce((total, entry) => total + (entry.direction === 'debit' ? entry.amountMinor : -entry.amountMinor), 0),
      );
      if (pair.length !== 2 || net.some((amount) => amount !== 0))
        violations.push(`${where}: ${refundJournalId} failed at the provider, its reversal and compensation do not net to zero`);
    }
    const reversals = journals.filter((journal) => !isSale(journal) && !netted.includes(journal));
    const sum = (items: { amountMinor: number }[]) => items.reduce((total, item) => total + item.amountMinor, 0);
    const reversed = reversals.map((journal) => journal.find((entry) => entry.account === ACCOUNTS.revenue)?.amountMinor ?? 0);
    const refunded = order.refundedMinor ?? 0;
    const counts = [providerRefunds.length, succeeded.length, reversals.length];
    const amounts = [sum(providerRefunds), sum(succeeded), reversed.reduce((a, b) => a + b, 0), refunded];
    // A refund the provider made and we did not record yet is in flight (its record pending): it may lead by that one.
    const providerAhead = providerRefunds.length - succeeded.length;
    if (providerAhead < 0 || providerAhead > inFlight.length || counts[1] !== counts[2])
      violations.push(`${where}: ${counts[0]} provider refunds, ${counts[1]} succeeded refunds, ${counts[2]} reversal journals`);
    if (providerAhead === 0 && new Set(amounts).size !== 1)
      violations.push(
        `${where}: refunded at the provider ${amounts[0]}, succeeded refunds ${amounts[1]}, reversed ${amounts[2]}, order ${amounts[3]}`,
      );
    for (const [index, journal] of reversals.entries())
      violations.push(...journalViolations(order, journal, refundJournal(reversed[index]), 'a refund reversal'));
    if (order.refundableMinor !== undefined && order.state !== 'failed') {
      const expected = capturedOf(order) - refunded - sum(inFlight);
      if (order.refundableMinor !== expected)
        violations.push(`${where}: refundable ${order.refundableMinor}, captured - refunded - in flight = ${expected}`);
    }
    // Every provider operation on the order's charge moves the order's currency, never another.
    for (const operation of operations.filter((candidate) => candidate.currency !== order.currency))
      violations.push(`${where}: provider ${operation.kind} ${operation._id} in ${operation.currency}, the order is in ${order.currency}`);
    for (const refund of refunds.filter((candidate) => candidate.currency !== order.currency || candidate.amountMinor <= 0))
      violations.push(`${where}: refund ${refund._id} of ${refund.amountMinor} ${refund.currency}, the order is in ${order.currency}`);
    const captures = operations.filter((operation) => operation.kind === 'capture');
    const voids = operations.filter((operation) => operation.kind === 'void');
    if (captures.length + voids.length > 1)
      violations.push(`${where}: ${captures.length} captures and ${voids.length} voids at the provider`);
    if (order.state === 'voided' && captures.length) violations.push(`${where}: voided but captured at the provider`);
  }
  const orderIds = new Set(store.orders.map((order) => order._id));
  for (const operation of store.operations) {
    if (!orderIds.has(byOrder(operation.chargeKey))) violations.push(`provider ${operation.kind} ${operation._id}: no order`);
  }
  return violations;
}

/** One balanced journal with exactly `expected`'s lines, in the order's currency and tenant. */
function journalViolations(order: OrderDoc, entries: EntryDoc[], expected: ReturnType<typeof paidOrderJournal>, what: string): string[] {
  const where = `order ${order._id}`;
  const balance = entries.reduce((sum, e) => sum + (e.direction === 'debit' ? e.amountMinor : -e.amountMinor), 0);
  const out: string[] = [];
  if (balance !== 0) out.push(`${where}: journal ${entries[0]?.journalId} off by ${balance}`);
  const line = (l: { account: string; direction: string; amountMinor: number }) => `${l.account}/${l.direction}/${l.amountMinor}`;
  if (JSON.stringify(entries.map(line).sort()) !== JSON.stringify(expected.map(line).sort()))
    out.push(`${where}: journal lines ${JSON.stringify(entries.map(line))} are not ${what} of ${expected[0]?.amountMinor}`);
  if (entries.some((entry) => entry.currency !== order.currency || entry.tenant !== order.tenant))
    out.push(`${where}: journal in another currency or tenant`);
  return out;
}

/** Each record against the order of its current attempt, its stored answer, and its tombstone. */
function perRecord(store: Store, now: Date, tombstoneMs: number): string[] {
  const violations: string[] = [];
  const tombById = new Map(store.tombstones.map((tomb) => [tomb._id, tomb]));
  for (const record of store.records.filter((candidate) => candidate.operation === CREATE)) {
    const where = `record ${record._id}`;
    const order = store.orders.find(
      (candidate) =>
        candidate.idempotency.recordId === record._id &&
        candidate.idempotency.attempt === record.attempt &&
        candidate.createdAt.getTime() >= record.createdAt.getTime(),
    );
    const response = record.response;
    if (response && response.status >= 500) violations.push(`${where}: a stored ${response.status}`);
    // Erasure: the stored answer is a 410 and the record names no subject.
    const erased = record.subject === null;
    if (!order) {
      // Cancel by key of a key that never ran: a record born canceled, with no order.
      if (record.status === 'canceled') continue;
      violations.push(`${where}: no order for its attempt ${record.attempt}`);
      continue;
    }
    const expected: Record<string, (o: OrderDoc) => boolean> = {
      pending: (o) => o.state === 'pending' || o.state === 'charged',
      // What the create answered, and whatever later operations made of it since - an asynchronous
      // payment's 202 included, whose order the provider's outcome may have failed since.
      complete: (o) => o.state !== 'pending' && o.state !== 'charged' && (o.state !== 'failed' || o.stateHistory?.processing !== undefined),
      failed: (o) => o.state === 'failed',
      // Canceled by key: whatever the create did, undone (refunded, voided) or stopped (failed), never still in flight.
      canceled: (o) => o.state !== 'pending' && o.state !== 'charged',
    };
    if (!expected[record.status]?.(order)) violations.push(`${where}: ${record.status} beside its order ${order._id} ${order.state}`);
    if (record.status === 'pending' && response) violations.push(`${where}: pending with a stored answer`);
    if (record.status === 'complete' && !response) violations.push(`${where}: complete without a stored answer`);
    if (record.status === 'failed' && response && order.failureReason !== 'card_declined' && response.status !== 410)
      violations.push(`${where}: a stored answer for an order that failed with ${order.failureReason}`);
    if (record.status === 'failed' && !response && order.failureReason === 'card_declined')
      violations.push(`${where}: a declined order whose 402 was not stored`);
    if (response && response.status !== 410) {
      // A create answers 201 (saved or authorized) or 202 (processing), or its 402 is stored.
      // A canceled record keeps the answer it had (never replayed: the key answers 409).
      const statuses = record.status === 'complete' ? [201, 202] : record.status === 'canceled' ? [201, 202, 402] : [402];
      if (!statuses.includes(response.status)) violations.push(`${where}: stored ${response.status} for a ${record.status} record`);
      const status = response.status;
      const location = response.headers?.location ?? null;
      if (status !== 402 && location !== `/v1/orders/${order._id}`)
        violations.push(`${where}: its stored answer names ${location}, not ${order._id}`);
    }
    if (!response || erased || response.status === 410) continue;
    // Every final answer leaves its tombstone, with that answer's status and location (README, Tombstones).
    const finishedBefore = record.expiresAt.getTime() + tombstoneMs;
    if (finishedBefore <= now.getTime()) continue;
    const tomb = tombById.get(tombstoneId(tombstoneScope(record), record.fingerprint));
    if (!tomb) violations.push(`${where}: a final answer without its tombstone`);
    else if (tomb.status !== response.status || tomb.location !== (response.headers?.location ?? null))
      violations.push(`${where}: its tombstone says ${tomb.status} ${tomb.location}`);
  }
  return violations;
}

/**
 * The provider's money against our books: what it took for answered
 * orders, less what it refunded, is the clearing account's balance - or on
 * its way (a refund the provider made whose record is still in flight).
 */
function money(store: Store): string[] {
  const orderById = new Map(store.orders.map((order) => [order._id, order]));
  const byCurrency = new Map<string, { charged: number; cleared: number; inFlight: number }>();
  const add = (currency: string, what: 'charged' | 'cleared' | 'inFlight', amount: number) => {
    const sums = byCurrency.get(currency) ?? { charged: 0, cleared: 0, inFlight: 0 };
    sums[what] += amount;
    byCurrency.set(currency, sums);
  };
  for (const charge of store.charges) {
    const order = orderById.get(charge._id.replace(/^charge:/, ''));
    // Charged but not saved yet: the journal comes with the save.
    if (order && TAKEN.includes(order.state)) add(charge.currency, 'charged', charge.capturedMinor ?? charge.amountMinor);
  }
  for (const operation of store.operations) {
    if (operation.kind === 'refund') add(operation.currency, 'charged', -operation.amountMinor);
  }
  for (const refund of store.refunds) {
    const order = orderById.get(refund.orderId);
    if (refund.state === 'pending' && order) add(order.currency, 'inFlight', refund.amountMinor);
  }
  for (const entry of store.entries) {
    if (entry.account !== ACCOUNTS.providerClearing) continue;
    add(entry.currency, 'cleared', entry.direction === 'debit' ? entry.amountMinor : -entry.amountMinor);
  }
  const out: string[] = [];
  for (const [currency, { charged, cleared, inFlight }] of byCurrency) {
    if (charged > cleared || charged < cleared - inFlight)
      out.push(
        `${currency}: the provider holds ${charged} for answered orders, the clearing account ${cleared} (${inFlight} refunds in flight)`,
      );
  }
  return out;
}

/**
 * Refunds against their orders, the ledger, the outbox, the provider and
 * their keys' records: per order, sum(succeeded) = refundedMinor <= capturedMinor
 * and refundableMinor = captured - succeeded - pending; per succeeded refund
 * one reversal journal of its amount, one order.refunded event and one
 * provider refund of its amount; no provider refund for a failed refund or
 * for no refund; each refund's record in the matching status with the
 * matching stored answer; at most one live refund per key record.
 */
function refunds(store: Store, input: InvariantInput): string[] {
  const out: string[] = [];
  const refundsByOrder = groupBy(store.refunds, (refund) => refund.orderId);
  const entriesByJournal = groupBy(store.entries, (entry) => entry.journalId);
  const providerByKey = new Map(
    store.operations.filter((operation) => operation.kind === 'refund').map((operation) => [operation._id, operation]),
  );
  const recordById = new Map(store.records.map((record) => [record._id, record]));
  const sum = (items: RefundDoc[]) => items.reduce((total, refund) => total + refund.amountMinor, 0);
  for (const order of store.orders) {
    const own = refundsByOrder.get(order._id) ?? [];
    const succeeded = sum(own.filter((refund) => refund.state === 'succeeded'));
    const pending = sum(own.filter((refund) => refund.state === 'pending'));
    const captured = order.capturedMinor ?? 0;
    const refunded = order.refundedMinor ?? 0;
    const where = `order ${order._id}`;
    if (refunded !== succeeded) out.push(`${where}: refundedMinor ${refunded}, its succeeded refunds sum to ${succeeded}`);
    if (refunded > captured) out.push(`${where}: refunded ${refunded} of ${captured} captured`);
    if (own.length > 0 && (order.refundableMinor ?? 0) !== captured - succeeded - pending)
      out.push(`${where}: refundableMinor ${order.refundableMinor}, captured ${captured} - succeeded ${succeeded} - pending ${pending}`);
    const state = refunded === 0 ? null : refunded === captured ? 'refunded' : 'partially_refunded';
    if (state && order.state !== state) out.push(`${where}: ${order.state} after refunds of ${refunded} of ${captured}`);
  }
  const orderIds = new Set(store.orders.map((order) => order._id));
  for (const refund of store.refunds) {
    const where = `refund ${refund._id}`;
    if (!orderIds.has(refund.orderId)) out.push(`${where}: no order ${refund.orderId}`);
    const journal = entriesByJournal.get(`jrn_${refund._id}`) ?? [];
    const events = store.events.filter((event) => event._id === `evt_${refund._id}_refunded`);
    const provider = providerByKey.get(refund.providerKey);
    // Succeeded, then failed by the provider (refund-failure.ts): answered 201 and reversed like a success,
    // then compensated (`jrn_<id>_failed`, netted against the reversal in afterTheCharge) - no provider refund stands.
    const failedLate = refund.state === 'failed' && refund.failureReason === 'failed_at_provider';
    if (failedLate) {
      if (!store.events.some((event) => event._id === `evt_${refund._id}_refund_failed`))
        out.push(`${where}: failed late without order.refund_failed`);
      if (provider) out.push(`${where}: failed at the provider, but the provider's refund stands`);
    }
    if (refund.state === 'succeeded' || failedLate) {
      const line = (l: { account: string; direction: string; amountMinor: number }) => `${l.account}/${l.direction}/${l.amountMinor}`;
      const expected = JSON.stringify(refundJournal(refund.amountMinor).map(line).sort());
      if (JSON.stringify(journal.map(line).sort()) !== expected)
        out.push(`${where}: its reversal journal is ${JSON.stringify(journal.map(line))}`);
      if (journal.some((e) => e.orderId !== refund.orderId || e.currency !== refund.currency || e.tenant !== refund.tenant))
        out.push(`${where}: its reversal is in another order, currency or tenant`);
      if (events.length !== 1) out.push(`${where}: ${events.length} order.refunded events`);
      if (failedLate) {
        // Checked above: no provider refund stands.
      } else if (!provider) out.push(`${where}: succeeded without a provider refund`);
      else if (
        provider.amountMinor !== refund.amountMinor ||
        provider.currency !== refund.currency ||
        provider.id !== refund.providerRefundId
      )
        out.push(`${where}: the provider refunded ${provider.amountMinor} ${provider.currency} as ${provider.id}`);
    } else {
      if (journal.length || events.length) out.push(`${where}: ${refund.state} but has a reversal journal or event`);
      if (refund.state === 'failed' && provider) out.push(`${where}: failed, but the provider refunded it`);
    }
    if (input.requireSettled && refund.state === 'pending') out.push(`${where}: still pending`);
    const record = recordById.get(refund.idempotency.recordId);
    if (!record) {
      out.push(`${where}: its idempotency record ${refund.idempotency.recordId} is missing`);
      continue;
    }
    if (record.operation !== REFUND_OPERATION) out.push(`${where}: its record is of ${record.operation}`);
    // Only the record's current attempt is bound to this refund; earlier attempts' refunds are abandoned.
    if (record.attempt !== refund.idempotency.attempt) {
      if (refund.state !== 'failed' || refund.failureReason !== 'abandoned')
        out.push(`${where}: ${refund.state} refund of attempt ${refund.idempotency.attempt}, its record is at ${record.attempt}`);
      continue;
    }
    const status = failedLate ? 'complete' : { pending: 'pending', succeeded: 'complete', failed: 'failed' }[refund.state];
    if (record.status !== status) out.push(`${where}: ${refund.state} beside its record ${record.status}`);
    const stored = record.response?.status ?? null;
    const expectedStored =
      refund.state === 'succeeded' || failedLate
        ? 201
        : refund.state === 'pending' || refund.failureReason === 'abandoned'
          ? null
          : refund.failureReason === 'declined'
            ? 402
            : 422;
    if (stored !== 410 && stored !== expectedStored) out.push(`${where}: its record stores ${stored}, expected ${expectedStored}`);
    if (stored === 201 && record.response?.headers?.location !== `/v1/orders/${refund.orderId}/refunds/${refund._id}`)
      out.push(`${where}: its stored answer names ${record.response?.headers?.location}`);
  }
  const refundKeys = new Set(store.refunds.map((refund) => refund.providerKey));
  for (const operation of store.operations.filter((operation) => operation.kind === 'refund')) {
    if (!refundKeys.has(operation._id)) out.push(`provider refund ${operation._id}: no refund of ours`);
  }
  for (const record of store.records.filter((candidate) => candidate.operation === REFUND_OPERATION)) {
    const live = store.refunds.filter((refund) => refund.idempotency.recordId === record._id && refund.failureReason !== 'abandoned');
    if (live.length > 1) out.push(`record ${record._id}: ${live.length} refunds not abandoned`);
    if (!store.refunds.some((refund) => refund.idempotency.recordId === record._id && refund.idempotency.attempt === record.attempt))
      out.push(`record ${record._id}: no refund for its attempt ${record.attempt}`);
  }
  return out;
}

function settled(store: Store): string[] {
  const pending = store.records.filter((record) => record.status === 'pending').length;
  return pending ? [`${pending} idempotency records still pending`] : [];
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
