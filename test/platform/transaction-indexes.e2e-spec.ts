import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getConnectionToken } from '@nestjs/mongoose';
import type { ClientSession, Connection } from 'mongoose';
import type { Document } from 'mongodb';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { onEmulator } from '../support/backend.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

/** Collection methods whose first argument is a query filter. */
const FILTERED = new Set([
  'find',
  'findOne',
  'findOneAndUpdate',
  'findOneAndReplace',
  'findOneAndDelete',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'countDocuments',
]);

interface TransactionQuery {
  collection: string;
  method: string;
  filter: Document;
}

/**
 * Every query a transaction runs must be served by an index: a collection
 * scan inside a transaction holds its snapshot (and, at scale, outlives
 * transactionLifetimeLimitSeconds). The queries are not listed by hand: the
 * test drives every transaction the service has (claim, charge, save, fail,
 * restart, replace-expired, erasure, an endpoint's create) and captures what they actually ran.
 */
describe('queries inside transactions use an index', () => {
  let t: TestApp;
  const queries: TransactionQuery[] = [];

  beforeAll(async () => {
    t = await startApp({
      dbName: 'test_transaction_indexes',
      override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway),
    });
    const connection = t.app.get<Connection>(getConnectionToken());
    connection.on('operation-start', (operation: { collectionName: string; method: string; params: unknown[] }) => {
      const session = operation.params.find((param): param is { session: ClientSession } => !!(param as { session?: unknown })?.session);
      if (!session?.session.inTransaction() || !FILTERED.has(operation.method)) return;
      queries.push({ collection: operation.collectionName, method: operation.method, filter: operation.params[0] as Document });
    });
    await driveEveryTransaction();
  });
  afterAll(async () => t.close());

  const post = (key: string, body: object = orderBody()) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(body);

  async function driveEveryTransaction(): Promise<void> {
    await post('k-ok').expect(201); // claim, charge (T1), save (T2)
    await post('k-declined', orderBody({ paymentMethod: { token: 'tok_decline' } })).expect(402); // fail
    (t.app.get(PaymentGateway) as ControllableGateway).failNext(1);
    await post('k-down').expect(503);
    await t.db.collection('idempotency_records').updateOne({ clientKey: 'k-down' }, { $set: { 'lease.expiresAt': new Date(0) } });
    await t.app.get(IdempotencyReaper).runOnce(); // abandon
    await post('k-down').expect(201); // restart
    await t.db.collection('idempotency_records').updateOne({ clientKey: 'k-ok' }, { $set: { expiresAt: new Date(0) } });
    await post('k-ok').expect(409); // the same body past retention: answered from its tombstone, nothing claimed
    await post('k-ok', orderBody({ items: [{ sku: 'sku_2', quantity: 1, unitPriceMinor: 999 }] })).expect(201); // another body replaces the expired record
    await t.http().delete('/v1/customers/cus_123/data').set(auth()).expect(200); // erasure
    const endpoint = { url: 'http://127.0.0.1:9/hook', events: ['order.completed'] };
    await t.http().post('/v1/webhook-endpoints').set(auth()).set('Idempotency-Key', 'k-endpoint').send(endpoint).expect(201); // the cap's count
  }

  it('captured the transactions it drove', () => {
    const seen = new Set(queries.map((query) => `${query.collection}.${query.method}`));
    for (const expected of [
      'idempotency_records.updateOne',
      'orders.updateOne',
      'orders.updateMany',
      'outbox_events.updateMany',
      'idempotency_records.find',
      'webhook_endpoints.countDocuments',
    ]) {
      expect(seen).toContain(expected);
    }
  });

  // On the emulator there is no query planner (no explain): the planner check is skipped there, with its reason,
  // and the weaker structural check below runs everywhere under its own, honest name.
  const noPlanner = 'the emulator has no query planner (explain); a real mongod runs this check';
  (onEmulator() ? it.skip : it)(
    `every one of them is served by an index scan${onEmulator() ? ` (SKIPPED: ${noPlanner})` : ''}`,
    async () => {
      const unindexed: string[] = [];
      for (const query of queries) {
        if (!(await usesIndexScan(query))) unindexed.push(`${query.collection}.${query.method}(${JSON.stringify(query.filter)})`);
      }
      expect(unindexed).toEqual([]);
    },
  );
  if (onEmulator()) process.stdout.write(`SKIPPED on the emulator: "served by an index scan" - ${noPlanner}\n`);

  it("every one of them constrains the leading field of one of its collection's indexes", async () => {
    const unindexed: string[] = [];
    for (const query of queries) {
      if (!(await startsAnIndex(query))) unindexed.push(`${query.collection}.${query.method}(${JSON.stringify(query.filter)})`);
    }
    expect(unindexed).toEqual([]);
  });

  it('counts an $or as indexed only when every one of its clauses is', async () => {
    const query = (filter: Document): TransactionQuery => ({ collection: 'webhook_deliveries', method: 'find', filter });
    expect(
      await startsAnIndex(
        query({
          $or: [
            { tenant: 'acme', subject: 'x' },
            { tenant: 'acme', subject: null },
          ],
        }),
      ),
    ).toBe(true);
    expect(await startsAnIndex(query({ tenant: 'acme', $or: [{ subject: 'x' }, { payload: 'y' }] }))).toBe(true);
    expect(await startsAnIndex(query({ $or: [{ tenant: 'acme', subject: 'x' }, { payload: 'y' }] }))).toBe(false);
  });

  async function usesIndexScan(query: TransactionQuery): Promise<boolean> {
    const explained = await t.db.command({ explain: { find: query.collection, filter: query.filter }, verbosity: 'queryPlanner' });
    return !JSON.stringify(explained.queryPlanner.winningPlan).includes('COLLSCAN');
  }

  async function startsAnIndex(query: TransactionQuery): Promise<boolean> {
    const leading = new Set((await t.db.collection(query.collection).listIndexes().toArray()).map((index) => Object.keys(index.key)[0]));
    return constrainsALeadingField(query.filter, leading);
  }

  /**
   * The planner's rule for a top-level `$or`: it can use indexes only when
   * every clause (with the fields beside the `$or`) can, else it scans the
   * collection for all of them. A field beside the `$or` that leads an index
   * is enough on its own.
   */
  function constrainsALeadingField(filter: Document, leading: Set<string>): boolean {
    const { $or: clauses, ...rest } = filter as { $or?: Document[] } & Document;
    if (Object.keys(rest).some((field) => leading.has(field))) return true;
    return (
      Array.isArray(clauses) && clauses.length > 0 && clauses.every((clause) => constrainsALeadingField({ ...rest, ...clause }, leading))
    );
  }
});
