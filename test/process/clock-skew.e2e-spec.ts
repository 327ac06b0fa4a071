import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { pathToFileURL } from 'node:url';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { startClockReportingProxy, type ClockReportingProxy } from '../support/clock-reporting-proxy.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import { findViolations } from '../support/invariants.js';
import { httpRequest, killAllServices, pollUntil, postOrder, startService, type ServiceProcess } from '../support/service-process.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const DB = 'test_clock_skew';
const SKEWED_CLOCK = pathToFileURL(new URL('../support/skewed-clock.mjs', import.meta.url).pathname).href;

/**
 * Instances whose own clocks are off by more than a lease or a retention
 * period: this process runs a correct instance in-process; the other runs as
 * a real child process whose wall clock is moved (Date.now, new Date) by a
 * preload, as on a host with a bad clock. Leases and expiry must follow the
 * store's clock, not either host's.
 */
describe('clock skew between instances', () => {
  let t: TestApp;
  let gateway: ControllableGateway;
  let proxy: ClockReportingProxy | null = null;
  let storeUri: string;

  beforeAll(async () => {
    t = await startApp({ dbName: DB, override: (builder) => builder.overrideProvider(PaymentGateway).useClass(ControllableGateway) });
    gateway = t.app.get(PaymentGateway) as ControllableGateway;
    // A real mongod reports its clock in hello; the emulator does not, so it is given one in front of it.
    const hello = await t.db.admin().command({ hello: 1 });
    proxy = hello.localTime instanceof Date ? null : await startClockReportingProxy(process.env.MONGODB_URI!);
    storeUri = proxy?.uri ?? process.env.MONGODB_URI!;
  });
  beforeEach(async () => {
    await t.reset();
    gateway.reset();
  });
  afterAll(async () => {
    await killAllServices();
    await t.close();
    await proxy?.close();
  });

  const skewedInstance = (skewMs: number, env: Record<string, string> = {}): Promise<ServiceProcess> =>
    startService({
      dbName: DB,
      simulatorDbName: `${DB}_psp`,
      label: `instance with its clock ${skewMs > 0 ? '+' : ''}${skewMs / 1000} s off`,
      env: {
        MONGODB_URI: storeUri,
        NODE_OPTIONS: `--import=${SKEWED_CLOCK}`,
        TEST_CLOCK_SKEW_MS: String(skewMs),
        REAPER_ENABLED: 'false',
        ...env,
      },
    });

  it("an instance 60 s ahead does not reap another instance's live attempt (lease 30 s), yet reaps one whose lease did expire", async () => {
    const post = (key: string) =>
      t
        .http()
        .post('/v1/orders')
        .set(auth())
        .set('Idempotency-Key', key)
        .send(orderBody())
        .then((res) => res);
    const hold = gateway.holdNextCharge('before');
    const inFlight = post('k-ahead');
    await hold.reached;
    // The control: an attempt whose lease really expired (by every clock). A dead reaper would leave it alone too.
    const holdControl = gateway.holdNextCharge('before');
    const control = post('k-expired-control');
    await holdControl.reached;
    await t.db
      .collection('idempotency_records')
      .updateOne({ clientKey: 'k-expired-control' }, { $set: { 'lease.expiresAt': new Date(Date.now() - 600_000) } });
    const controlOrder = await t.db.collection('orders').findOne({ 'idempotency.recordId': { $regex: ':k-expired-control$' } });

    let order;
    let ahead: ServiceProcess | undefined;
    try {
      ahead = await skewedInstance(60_000, { REAPER_ENABLED: 'true', REAPER_INTERVAL_MS: '200' });
      // Counts, not a sleep: its reaper ran several passes and reaped the control.
      const reaperRuns = async () =>
        Number(/^reaper_runs_total (\d+)/m.exec((await httpRequest(ahead!.baseUrl, { method: 'GET', path: '/metrics' })).text)?.[1] ?? 0);
      await pollUntil(
        async () => (await reaperRuns()) >= 3 && (await t.db.collection('orders').findOne({ _id: controlOrder!._id }))?.state === 'failed',
        20_000,
        async () =>
          `reaper passes ${await reaperRuns()}; control order ${JSON.stringify(await t.db.collection('orders').findOne({ _id: controlOrder!._id }))}`,
      );
      order = await t.db.collection('orders').findOne({ _id: { $ne: controlOrder!._id } });
      expect({
        state: order!.state,
        canceledKeys: await t.simulatorDb.collection('charges').countDocuments({ status: 'canceled' }),
      }).toEqual({
        state: 'pending',
        canceledKeys: 1, // the control's, and only it
      });
      expect(ahead.stdout() + ahead.stderr()).not.toMatch(/reports no clock/);
    } finally {
      hold.release();
      holdControl.release();
      // Its reaper must not outlive this test (the next one runs other instances on the same databases).
      ahead?.kill('SIGKILL');
      await ahead?.waitForExit();
    }
    const res = await inFlight;
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(res.body.id).toBe(order!._id);
    // The control's worker found its attempt abandoned and ran the next one.
    const again = await control;
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(controlOrder!._id);
    expect(await findViolations({ ...t, acknowledgedOrderIds: [res.body.id, again.body.id], requireSettled: true })).toEqual([]);
  }, 40_000);

  it('an instance 2 min behind does not store records already expired (retention 60 s): the retry elsewhere is a replay', async () => {
    const behind = await skewedInstance(-120_000, { IDEMPOTENCY_TTL_SECONDS: '60' });
    const first = await postOrder(behind.baseUrl, 'k-behind');
    expect(first.status).toBe(201);
    const record = await t.db.collection('idempotency_records').findOne({ clientKey: 'k-behind' });
    expect(record!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 50_000);

    // The reply was lost; the client retries and reaches the other instance.
    const retry = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-behind').send(orderBody()).expect(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.id).toBe(first.json.id);
    expect(await t.simulatorDb.collection('charges').countDocuments({ status: 'succeeded' })).toBe(1);
  }, 30_000);
});
