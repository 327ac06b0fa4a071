import { FaultInjector } from '../../src/common/fault-injector.js';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { ControllableGateway, installCrashStandIn, ThrowingFaultInjector } from './controllable-gateway.js';
import { auth, orderBody, startApp, type TestApp, type TestAppOptions } from './test-app.js';

/** The real app with test controls on the payment provider and the crash points, and its reaper at hand. */
export interface ControlledApp {
  t: TestApp;
  gateway: ControllableGateway;
  faults: ThrowingFaultInjector;
  reaper: IdempotencyReaper;
  /** Empties the databases and disarms every control. */
  reset(): Promise<void>;
  post(key: string): ReturnType<ReturnType<TestApp['http']>['post']>;
  /** As if every pending record's worker had stalled past its lease. */
  expireLeases(): Promise<unknown>;
}

export async function startControlledApp(options: Omit<TestAppOptions, 'override'>): Promise<ControlledApp> {
  const faults = new ThrowingFaultInjector();
  const t = await startApp({
    ...options,
    override: (builder) =>
      builder.overrideProvider(PaymentGateway).useClass(ControllableGateway).overrideProvider(FaultInjector).useValue(faults),
  });
  const gateway = t.app.get(PaymentGateway) as ControllableGateway;
  // A simulated crash leaves its lease held, as a dead process does (see installCrashStandIn).
  installCrashStandIn(t.app, faults, gateway);
  return {
    t,
    gateway,
    faults,
    reaper: t.app.get(IdempotencyReaper),
    reset: async () => {
      await t.reset();
      gateway.reset();
      faults.reset();
    },
    post: (key) => t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', key).send(orderBody()),
    expireLeases: () =>
      t.db.collection('idempotency_records').updateMany({ status: 'pending' }, { $set: { 'lease.expiresAt': new Date(Date.now() - 1) } }),
  };
}
