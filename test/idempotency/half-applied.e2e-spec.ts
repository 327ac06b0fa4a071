import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { OpenAPIV3 } from 'openapi-types';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { paidOrderJournal } from '../../src/ledger/journal.js';
import type { Order } from '../../src/orders/order.js';
import { orderView } from '../../src/orders/order.view.js';
import { ControllableGateway, ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { responseCheck } from '../support/openapi-check.js';
import { startControlledApp, type ControlledApp } from '../support/controlled-app.js';
import { auth, type TestApp } from '../support/test-app.js';

type Doc = { _id: string } & Record<string, unknown>;

/**
 * A payment, journal or event exists but its order did not move on (a
 * transaction that applied in part, a restore, a hand edit): what the
 * workflow would have written is adopted; anything else stops the attempt
 * loudly - counted, alerted, visible - never a silent 500 loop.
 */
describe('half-applied state: adopt what is exactly ours, surface the rest', () => {
  let app: ControlledApp;
  let t: TestApp;
  let gateway: ControllableGateway;
  let reaper: IdempotencyReaper;
  let faults: ThrowingFaultInjector;

  beforeAll(async () => {
    app = await startControlledApp({
      dbName: 'test_half_applied',
    });
    ({ t, gateway, reaper, faults } = app);
  });
  beforeEach(async () => app.reset());
  afterAll(async () => t.close());

  const post = (key: string) => app.post(key);
  const expireLeases = () => app.expireLeases();
  const theOrder = async () => (await t.db.collection<Doc>('orders').findOne({})) as unknown as Order;
  const metric = async (series: string) => {
    const text = (await t.http().get('/metrics').expect(200)).text;
    return Number(new RegExp(`^${series.replace(/[{}".]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  };

  /** The payment T1 writes for the provider's charge of this order. */
  async function paymentAsWritten(order: Order) {
    const charge = await t.simulatorDb.collection<Doc>('charges').findOne({ _id: `charge:${order._id}` });
    return {
      _id: `pay_${String(charge!.id).replace(/^ch_/, '')}`,
      tenant: order.tenant,
      orderId: order._id,
      chargeKey: `charge:${order._id}`,
      providerChargeId: charge!.id,
      amountMinor: charge!.amountMinor,
      currency: charge!.currency,
      status: 'succeeded',
      createdAt: new Date(Date.now() - 5000),
    };
  }

  it('a payment already written exactly as the charge phase would write it is adopted: the retry finishes the order', async () => {
    gateway.crashAfterNextCharge();
    await post('k-adopt-payment').expect(500);
    // A dead worker: its lease is still held (no release ran), until expireLeases() below.
    expect(faults.releasesSkipped).toBe(1);
    const order = await theOrder();
    expect(order.state).toBe('pending');
    await t.db.collection<Doc>('payments').insertOne(await paymentAsWritten(order));
    await expireLeases();

    const retry = await post('k-adopt-payment').expect(201);
    expect(retry.body).toMatchObject({ id: order._id, state: 'saved' });
    expect(await t.db.collection('payments').countDocuments()).toBe(1);
    expect(await metric('workflow_adopted_documents_total{what="payment"}')).toBe(1);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [order._id], requireSettled: true })).toEqual([]);
  });

  it('a journal and an event already written exactly as the save phase would write them are adopted by the reaper', async () => {
    faults.crashOnceAt('after-charged');
    await post('k-adopt-journal').expect(500);
    const order = await theOrder();
    expect(order.state).toBe('charged');
    const lines = paidOrderJournal(order.amountMinor);
    await t.db.collection<Doc>('ledger_entries').insertMany(
      lines.map((line, index) => ({
        _id: `jrn_${order._id}:${index + 1}`,
        tenant: order.tenant,
        journalId: `jrn_${order._id}`,
        orderId: order._id,
        line: index + 1,
        ...line,
        currency: order.currency,
        postedAt: new Date(Date.now() - 5000),
      })),
    );
    const saved: Order = { ...order, state: 'saved', paymentToken: null };
    await t.db.collection<Doc>('outbox_events').insertOne({
      _id: `evt_${order._id}_completed`,
      tenant: order.tenant,
      type: 'order.completed',
      payload: orderView(saved),
      status: 'published', // the relay even delivered it already
      attempts: 1,
      availableAt: new Date(),
      createdAt: new Date(),
      publishedAt: new Date(),
      lastError: null,
    });
    await expireLeases();

    const run = await reaper.runOnce();
    expect(run).toMatchObject({ completed: 1, error: 0 });
    expect(await theOrder()).toMatchObject({ state: 'saved' });
    expect(await t.db.collection('ledger_entries').countDocuments()).toBe(4);
    expect(await metric('workflow_adopted_documents_total{what="journal"}')).toBe(1);
    expect(await metric('workflow_adopted_documents_total{what="outbox event"}')).toBe(1);
    expect(await findViolations({ ...t, requireSettled: true })).toEqual([]);
  });

  it('part of the journal already there stops the attempt loudly, and the lines this attempt wrote roll back with it', async () => {
    // The journal is written by upserts that skip existing ids (one command): the lines they did write must not outlive the conflict.
    faults.crashOnceAt('after-charged');
    await post('k-partial-journal').expect(500);
    const order = await theOrder();
    expect(order.state).toBe('charged');
    const lines = paidOrderJournal(order.amountMinor).slice(0, 2);
    await t.db.collection<Doc>('ledger_entries').insertMany(
      lines.map((line, index) => ({
        _id: `jrn_${order._id}:${index + 1}`,
        tenant: order.tenant,
        journalId: `jrn_${order._id}`,
        orderId: order._id,
        line: index + 1,
        ...line,
        currency: order.currency,
        postedAt: new Date(Date.now() - 5000),
      })),
    );
    await expireLeases();

    await post('k-partial-journal').expect(500);
    expect(await metric('idempotency_state_conflicts_total{operation="orders.create",what="journal"}')).toBe(1);
    const view = await t.http().get('/v1/idempotency-keys/k-partial-journal').set(auth()).expect(200);
    expect(view.body.records[0]).toMatchObject({
      status: 'pending',
      conflict: { what: 'journal', detail: expect.stringMatching(/2 of its 4 lines exist/) },
    });
    expect(await t.db.collection('ledger_entries').countDocuments()).toBe(2);
    expect(await theOrder()).toMatchObject({ state: 'charged' });
    expect(await t.db.collection('outbox_events').countDocuments()).toBe(0);
  });

  it('a different payment under the charge key stops the attempt loudly: counted, noted for the admin API, left alone by the reaper', async () => {
    gateway.crashAfterNextCharge();
    await post('k-conflict').expect(500);
    const order = await theOrder();
    await t.db.collection<Doc>('payments').insertOne({ ...(await paymentAsWritten(order)), amountMinor: 1 });
    await expireLeases();

    await post('k-conflict').expect(500);
    expect(await metric('idempotency_state_conflicts_total{operation="orders.create",what="payment"}')).toBe(1);
    const view = await t.http().get('/v1/idempotency-keys/k-conflict').set(auth()).expect(200);
    const documented = await responseCheck((await t.http().get('/docs/json').expect(200)).body as OpenAPIV3.Document);
    expect(documented.errors('GET', '/v1/idempotency-keys/{key}', 200, 'application/json', view.body)).toEqual([]);
    expect(view.body.records[0]).toMatchObject({
      status: 'pending',
      conflict: { what: 'payment', detail: expect.stringMatching(/differs in amountMinor/), at: expect.any(String) },
    });
    // Retrying cannot resolve it: the reaper does not loop on it (the pending-stuck alert still sees its age).
    await expireLeases();
    expect(await reaper.runOnce()).toMatchObject({ examined: 0 });
    expect(await theOrder()).toMatchObject({ state: 'pending' });

    // Once someone has put the right document in place, a release hands the key back and it finishes.
    await t.db.collection<Doc>('payments').updateOne({ orderId: order._id }, { $set: { amountMinor: order.amountMinor } });
    const released = await t.http().post('/v1/idempotency-keys/k-conflict/release').set(auth()).expect(200);
    expect(released.body).toEqual({ decision: 'completed' });
    expect((await t.http().get('/v1/idempotency-keys/k-conflict').set(auth()).expect(200)).body.records[0]).toMatchObject({
      status: 'complete',
      conflict: null,
    });
  });
});
