import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { MongoClient, type Db } from 'mongodb';
import type { OrderKeyState } from './report.js';
import { sleep } from './service.js';

/** Everything the create path writes; emptied between scenarios (the emulator slows down as collections grow). */
const SERVICE_COLLECTIONS = ['idempotency_records', 'orders', 'payments', 'ledger_entries', 'outbox_events'];
const SIMULATOR_COLLECTIONS = ['charges'];

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
   * here), or `timeoutMs`. Returns false on the timeout.
   */
  async quiesce(timeoutMs = 3000): Promise<boolean> {
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
      } else if (Date.now() - unchangedSince >= 500) {
        return true;
      }
      await sleep(100);
    }
    return false;
  }

  async orderKeyStates(filter: Record<string, unknown> = {}): Promise<OrderKeyState[]> {
    const orders = await this.db
      .collection<{ _id: string; state: string; idempotency?: { recordId: string } }>('orders')
      .find(filter, { projection: { state: 1, 'idempotency.recordId': 1 } })
      .toArray();
    return orders.map((order) => ({ recordId: order.idempotency?.recordId ?? '(none)', state: order.state }));
  }

  /** Only for a MONGODB_URI backend (ephemeral ones vanish on stop); the emulator has no dropDatabase. */
  async dropBenchDatabases(): Promise<void> {
    await this.db.dropDatabase().catch(() => undefined);
    await this.simulatorDb.dropDatabase().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * The baseline: `workers` concurrent loops, each running the claim
   * transaction of the create path with the bare driver - insert an
   * idempotency record and a pending order in one transaction, commit -
   * until `durationSeconds` run out.
   */
  async rawClaimLoop(workers: number, durationSeconds: number, keyPrefix: string): Promise<RawLoopResult> {
    const records = this.db.collection<ClaimDocuments['record']>('idempotency_records');
    const orders = this.db.collection<ClaimDocuments['order']>('orders');
    const latencies: number[] = [];
    let failed = 0;
    let sequence = 0;
    const started = performance.now();
    const end = started + durationSeconds * 1000;

    const worker = async () => {
      while (performance.now() < end) {
        const { record, order } = claimDocuments(`${keyPrefix}-${++sequence}`);
        const begin = performance.now();
        const session = this.client.startSession();
        try {
          await session.withTransaction(async () => {
            await records.insertOne(record, { session });
            await orders.insertOne(order, { session });
          }, TRANSACTION_OPTIONS);
          latencies.push(performance.now() - begin);
        } catch {
          failed++;
        } finally {
          await session.endSession();
        }
      }
    };
    await Promise.all(Array.from({ length: workers }, worker));
    return { durationSeconds: (performance.now() - started) / 1000, committed: latencies.length, failed, latencies };
  }
}

type ClaimDocuments = ReturnType<typeof claimDocuments>;

/** Documents shaped like the service's claim (idempotency record + pending order), not sharing its code. */
function claimDocuments(clientKey: string) {
  const now = new Date();
  const recordId = `bench:orders-service:orders.create:v1:${clientKey}`;
  const orderId = `ord_${randomBytes(12).toString('hex')}`;
  const record = {
    _id: recordId,
    tenant: 'bench',
    operation: 'orders.create',
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
