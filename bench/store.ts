import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { MongoClient, type ClientSession, type Db } from 'mongodb';
import type { OrderKeyState, RefundOrderState, StoredRefund } from './report.js';
import { sleep } from './service.js';

/** Everything the create path writes; emptied between scenarios (the emulator slows down as collections grow). */
const SERVICE_COLLECTIONS = ['idempotency_records', 'orders', 'payments', 'ledger_entries', 'outbox_events', 'refunds', 'webhook_inbox'];
const SIMULATOR_COLLECTIONS = ['charges', 'operations'];

/** The same settings as the service's transactions (src/database/transaction.runner.ts). */
const TRANSACTION_OPTIONS = {
  readConcern: { level: 'snapshot' as const },
  writeConcern: { w: 'majority' as const, j: true },
};

export interface RawLoopResult {
  durationSeconds: number;
  committed: number;
  failed: number;
  /** Milliseconds per committed transaction. */
  latencies: number[];
}

/** The benchmark's own connection to the store: cleaning, database checks, and the raw-driver baseline. */
export class BenchStore {
  private constructor(
    private readonly client: MongoClient,
    readonly db: Db,
    readonly simulatorDb: Db,
  ) {}

  static async connect(uri: string, dbName: string, simulatorDbName: string): Promise<BenchStore> {
    const client = new MongoClient(uri, {
      // Polling heartbeats: what the emulator supports, harmless on mongod (the service does the same).
      serverMonitoringMode: 'poll',
      writeConcern: { w: 'majority', j: true },
      retryWrites: true,
      maxPoolSize: 128,
      serverSelectionTimeoutMS: 5000,
    });
    await client.connect();
    return new BenchStore(client, client.db(dbName), client.db(simulatorDbName));
  }

  async clean(): Promise<void> {
    await Promise.all([
      ...SERVICE_COLLECTIONS.map((name) => this.db.collection(name).deleteMany({})),
      ...SIMULATOR_COLLECTIONS.map((name) => this.simulatorDb.collection(name).deleteMany({})),
    ]);
  }

  /**
   * After a load run autocannon stops sending, but requests already inside
   * the service still finish. Wait until no order is mid-flight (pending or
   * charged), or until the order counts stop moving for half a second (an
   * order abandoned mid-flight stays pending until the reaper, which is off
   * here), or `timeoutMs`. Returns false on the timeout. `stillForMs`: how
   * long unchanged counts mean "abandoned", not "slow".
   */
  async quiesce(timeoutMs = 3000, stillForMs = 500): Promise<boolean> {
    const orders = this.db.collection('orders');
    const deadline = Date.now() + timeoutMs;
    let last = '';
    let unchangedSince = Date.now();
    while (Date.now() < deadline) {
      const [inFlight, total] = await Promise.all([
        orders.countDocuments({ state: { $in: ['pending', 'charged'] } }),
        orders.countDocuments({}),
      ]);
      if (inFlight === 0) return true;
      const snapshot = `${inFlight}/${total}`;
      if (snapshot !== last) {
        last = snapshot;
        unchangedSince = Date.now();
      } else if (Date.now() - unchangedSince >= stillForMs) {
        return true;
      }
      await sleep(100);
    }
    return false;
  }

  /** Orders that reached `saved`: the creates a run completed, whether or not the load generator saw the answer. */
  savedOrders(): Promise<number> {
    return this.db.collection('orders').countDocuments({ state: 'saved' });
  }

  async orderKeyStates(filter: Record<string, unknown> = {}): Promise<OrderKeyState[]> {
    const orders = await this.db
      .collection<{ _id: string; state: string; idempotency?: { recordId: string } }>('orders')
      .find(filter, { projection: { state: 1, 'idempotency.recordId': 1 } })
      .toArray();
    return orders.map((order) => ({ recordId: order.idempotency?.recordId ?? '(none)', state: order.state }));
  }

  /** The orders' captured and refunded amounts, as stored (the refund rows' check). */
  async refundOrderStates(ids: readonly string[]): Promise<RefundOrderState[]> {
    const orders = await this.db
      .collection<{ _id: string; capturedMinor?: number; refundedMinor?: number }>('orders')
      .find({ _id: { $in: [...ids] } }, { projection: { capturedMinor: 1, refundedMinor: 1 } })
      .toArray();
    return orders.map((order) => ({ id: order._id, capturedMinor: order.capturedMinor ?? 0, refundedMinor: order.refundedMinor ?? 0 }));
  }

  /** The refunds of these orders, as stored. */
  async refundsOf(orderIds: readonly string[]): Promise<StoredRefund[]> {
    const refunds = await this.db
      .collection<{ _id: string; orderId: string; state: string; amountMinor: number }>('refunds')
      .find({ orderId: { $in: [...orderIds] } }, { projection: { orderId: 1, state: 1, amountMinor: 1 } })
      .toArray();
    return refunds.map((refund) => ({ orderId: refund.orderId, state: refund.state, amountMinor: refund.amountMinor }));
  }

  /** The simulator's charge under a key (the webhook row builds its event from it). */
  charge(chargeKey: string): Promise<{ _id: string; id: string; amountMinor: number; currency: string } | null> {
    return this.simulatorDb
      .collection<{ _id: string; id: string; amountMinor: number; currency: string }>('charges')
      .findOne({ _id: chargeKey });
  }

  /** What webhook deliveries did to these orders: saved ones, payments, order.completed events, and the inbox's rows. */
  async webhookEffects(orderIds: readonly string[]): Promise<{ saved: number; payments: number; completedEvents: number; inbox: number }> {
    const ids = { $in: [...orderIds] };
    const [saved, payments, completedEvents, inbox] = await Promise.all([
      this.db.collection<{ _id: string }>('orders').countDocuments({ _id: ids, state: 'saved' }),
      this.db.collection('payments').countDocuments({ orderId: ids }),
      this.db.collection('outbox_events').countDocuments({ aggregateId: ids, type: 'order.completed' }),
      this.db.collection('webhook_inbox').countDocuments({}),
    ]);
    return { saved, payments, completedEvents, inbox };
  }

  /** Until no refund is pending (requests still inside the service after a load run), or `timeoutMs`; false on the timeout. */
  async quiesceRefunds(timeoutMs: number, stillForMs = 1_000): Promise<boolean> {
    const refunds = this.db.collection('refunds');
    const deadline = Date.now() + timeoutMs;
    let last = -1;
    let unchangedSince = Date.now();
    while (Date.now() < deadline) {
      const pending = await refunds.countDocuments({ state: 'pending' });
      if (pending === 0) return true;
      if (pending !== last) {
        last = pending;
        unchangedSince = Date.now();
      } else if (Date.now() - unchangedSince >= stillForMs) {
        return true;
      }
      await sleep(100);
    }
    return false;
  }

  /** Adds finished idempotency records of other keys until the collection holds `total` (the growth scenario). */
  async growRecords(total: number, prefix: string): Promise<void> {
    const records = this.db.collection<StoredDoc>('idempotency_records');
    for (let count = await records.countDocuments(); count < total;) {
      const batch = Array.from({ length: Math.min(1000, total - count) }, (_, i) => {
        const { record } = claimDocuments(`${prefix}-${count + i}`);
        return { ...record, status: 'complete', lease: null, response: { status: 201, body: randomBytes(300).toString('base64') } };
      });
      await records.insertMany(batch, { ordered: false });
      count += batch.length;
    }
  }

  /**
   * Empties the twin's records and orders (bench/peers.ts, before each first-request window), as clean()
   * does ours between scenarios: on the emulator the twin's creates slowed from ~10 to ~3 a second within
   * 160 records (4.3 s, 8.5 s, 14.8 s per 40).
   */
  async cleanTwin(collection: string): Promise<void> {
    await Promise.all(TWIN_COLLECTIONS.concat(collection).map((name) => this.twinDb.collection(name).deleteMany({})));
  }

  /** The twin's database (bench/peers/ours-pkg.ts): our package binds a database to one service name. */
  get twinDb(): Db {
    return this.client.db(twinDbName(this.db.databaseName));
  }

  /** Only for a MONGODB_URI backend (ephemeral ones vanish on stop); the emulator has no dropDatabase. */
  async dropBenchDatabases(): Promise<void> {
    await this.db.dropDatabase().catch(() => undefined);
    await this.simulatorDb.dropDatabase().catch(() => undefined);
    await this.twinDb.dropDatabase().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * The floor: `workers` concurrent loops, each doing with the bare driver
   * the same store work as one create of the service, in the same order and
   * with the same read and write concerns - look the key up; T0 insert the
   * record and the pending order; insert the provider's charge (outside any
   * transaction, as the simulator does); T1 checkpoint the record (CAS on
   * the lease), insert the payment, move the order to charged; T2 read the
   * order, complete the record with a response, insert the 4 journal lines
   * and the outbox event, move the order to saved - until `durationSeconds`
   * run out. No HTTP, no Nest, no validation, no cipher.
   */
  async rawCreateLoop(workers: number, durationSeconds: number, keyPrefix: string): Promise<RawLoopResult> {
    const latencies: number[] = [];
    let failed = 0;
    let sequence = 0;
    const started = performance.now();
    const end = started + durationSeconds * 1000;
    const worker = async () => {
      while (performance.now() < end) {
        const begin = performance.now();
        try {
          await this.rawCreate(createDocuments(`${keyPrefix}-${++sequence}`));
          latencies.push(performance.now() - begin);
        } catch {
          failed++;
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    return { durationSeconds: (performance.now() - started) / 1000, committed: latencies.length, failed, latencies };
  }

  private async rawCreate(docs: CreateDocuments): Promise<void> {
    const { record, order, charge, payment, entries, event } = docs;
    const records = this.db.collection<StoredDoc>('idempotency_records');
    const orders = this.db.collection<StoredDoc>('orders');
    const owned = { _id: record._id, status: 'pending', 'lease.owner': record.lease.owner };
    await records.findOne({ _id: record._id });
    await this.transaction(async (session) => {
      await records.insertOne(record, { session });
      await orders.insertOne(order, { session });
    });
    await this.simulatorDb.collection<StoredDoc>('charges').insertOne(charge);
    await this.transaction(async (session) => {
      await records.updateOne(owned, { $set: { recoveryPoint: 'charged', updatedAt: new Date() } }, { session });
      await this.db.collection<StoredDoc>('payments').insertOne(payment, { session });
      await orders.updateOne({ _id: order._id, state: 'pending' }, { $set: { state: 'charged', paymentId: payment._id } }, { session });
    });
    await this.transaction(async (session) => {
      await orders.findOne({ _id: order._id }, { session });
      const response = { status: 201, body: randomBytes(400).toString('base64') };
      await records.updateOne(owned, { $set: { status: 'complete', response, lease: null, updatedAt: new Date() } }, { session });
      await this.db.collection<StoredDoc>('ledger_entries').insertMany(entries, { session, ordered: true });
      await this.db.collection<StoredDoc>('outbox_events').insertOne(event, { session });
      await orders.updateOne({ _id: order._id, state: 'charged' }, { $set: { state: 'saved', paymentToken: null } }, { session });
    });
  }

  private async transaction(work: (session: ClientSession) => Promise<void>): Promise<void> {
    const session = this.client.startSession();
    try {
      await session.withTransaction(work, TRANSACTION_OPTIONS);
    } finally {
      await session.endSession();
    }
  }
}

type CreateDocuments = ReturnType<typeof createDocuments>;
/** String ids, as the service's documents have. */
type StoredDoc = { _id: string } & Record<string, unknown>;

/** Documents shaped like the service's (record, order, charge, payment, journal, event), not sharing its code. */
function createDocuments(clientKey: string) {
  const { record, order } = claimDocuments(clientKey);
  const now = new Date();
  const charge = { _id: `charge:${order._id}`, status: 'succeeded', amountMinor: 2500, currency: 'USD', createdAt: now };
  const payment = {
    _id: `pay_${randomBytes(12).toString('hex')}`,
    tenant: 'bench',
    orderId: order._id,
    chargeKey: charge._id,
    providerChargeId: `ch_${randomBytes(12).toString('hex')}`,
    amountMinor: 2500,
    currency: 'USD',
    status: 'succeeded',
    createdAt: now,
  };
  const journalId = `jrn_${order._id}`;
  const entries = ['debit', 'credit', 'debit', 'credit'].map((direction, line) => ({
    _id: `${journalId}:${line}`,
    tenant: 'bench',
    journalId,
    line,
    orderId: order._id,
    account: `account_${line}`,
    direction,
    amountMinor: 2500,
    currency: 'USD',
    postedAt: now,
  }));
  const event = {
    _id: `evt_${order._id}_completed`,
    tenant: 'bench',
    type: 'order.completed',
    payload: { id: order._id },
    status: 'pending',
    attempts: 0,
    availableAt: now,
    createdAt: now,
  };
  return { record, order, charge, payment, entries, event };
}

/** Documents shaped like the service's claim (idempotency record + pending order), not sharing its code. */
function claimDocuments(clientKey: string) {
  const now = new Date();
  const recordId = `bench:orders-service:orders.create:key:${clientKey}`;
  const orderId = `ord_${randomBytes(12).toString('hex')}`;
  const record = {
    _id: recordId,
    tenant: 'bench',
    operation: 'orders.create',
    clientKey,
    status: 'pending',
    fingerprint: { algorithm: 'sha256-cjson-v1', value: randomBytes(32).toString('hex') },
    schemaVersion: 1,
    attempt: 1,
    lease: { owner: randomUUID(), lockedAt: now, expiresAt: new Date(now.getTime() + 30_000) },
    recoveryPoint: null,
    subject: 'cus_bench',
    response: null,
    createdAt: now,
    updatedAt: now,
    expiresAt: new Date(now.getTime() + 86_400_000),
    purgeAt: null,
  };
  const order = {
    _id: orderId,
    tenant: 'bench',
    customerId: 'cus_bench',
    currency: 'USD',
    items: [{ sku: 'sku_bench', quantity: 2, unitPriceMinor: 1250 }],
    amountMinor: 2500,
    paymentToken: 'tok_visa',
    state: 'pending',
    stateHistory: { pending: now },
    failureReason: null,
    paymentId: null,
    idempotency: { recordId, attempt: 1 },
    createdAt: now,
    updatedAt: now,
  };
  return { record, order };
}

/** The package's collections in the twin's database. */
const TWIN_COLLECTIONS = ['idempotency_records', 'idempotency_tombstones', 'idempotency_subjects', 'idempotency_duplicate_guard'];

/** The twin's own database beside the run's: its records are bound to its service name, not the orders service's. */
export const twinDbName = (benchDbName: string) => `${benchDbName}_twin`;
