import type { Type } from '@nestjs/common';
import type { Db } from 'mongodb';
import { Clock } from '../../src/common/clock.js';
import { FaultInjector } from '../../src/common/fault-injector.js';
import type { FaultPoint } from '../../src/config/configuration.js';
import { IdempotencyReaper, type ReaperRun } from '@idempotent-orders/nest-idempotency';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { StripePaymentGateway } from '../../src/payment-stripe/stripe-payment.gateway.js';
import { ControllableGateway, installCrashStandIn, ThrowingFaultInjector } from '../support/controllable-gateway.js';
import { ControllableStripeGateway, type OutageEffect } from '../support/stripe-fake/controllable-stripe-gateway.js';
import { exportBooks } from '../support/stripe-fake/provider-books.js';
import type { StripeFake } from '../support/stripe-fake/stripe-fake.js';
import { auth, startApp, type TestApp } from '../support/test-app.js';

/** One clock for every instance, moved only by the test. */
export class ManualClock extends Clock {
  private offsetMs = 0;
  private base = Date.now();

  now(): Date {
    return new Date(this.base + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  /** Milliseconds moved since the last reset: the model's own time axis. */
  get offset(): number {
    return this.offsetMs;
  }

  /** A model time as the service's Date. */
  at(offsetMs: number): Date {
    return new Date(this.base + offsetMs);
  }

  reset(): void {
    this.base = Date.now();
    this.offsetMs = 0;
  }
}

/**
 * The test controls the models use, whichever adapter is behind the port:
 * the simulator's ControllableGateway or the Stripe adapter's
 * ControllableStripeGateway (test/support/stripe-fake/).
 */
export type ModelGateway = Pick<
  ControllableGateway,
  | 'operationCalls'
  | 'failNextOperations'
  | 'holdNextOperation'
  | 'holdNextCharge'
  | 'cancelHold'
  | 'failNext'
  | 'held'
  | 'releaseAll'
  | 'reset'
> & {
  /** What the last outage did at the provider: on Stripe a fault may lose the answer after the money moved; the simulator's never does. */
  lastOutage?: OutageEffect | null;
};

export interface Instance {
  t: TestApp;
  gateway: ModelGateway;
  faults: ThrowingFaultInjector;
  reaper: IdempotencyReaper;
}

export interface Reply {
  status: number;
  body: string;
  replayed: boolean;
  location?: string;
  retryAfter?: string;
}

/** A request stopped at the provider call (before or after it charged): it resumes when the model says so. */
export interface Zombie {
  instance: number;
  key: string;
  variant: number;
  release: () => void;
  reply: Promise<Reply>;
}

// A resume window longer than the lease: a released attempt (outage) outlives the lease without being reaped.
// Tombstones live two retention periods past retention, so a few clock jumps reach their end too.
export const SETTINGS = { leaseMs: 5_000, ttlSeconds: 60, resumeWindowMs: 15_000, tombstoneSeconds: 120 };

export interface SystemOptions {
  /** The payment gateway class of every instance (a planted defect can swap it). */
  gateway?: Type<ControllableGateway>;
  /** IDEMPOTENCY_IN_FLIGHT_WAIT_MS (default 0: a duplicate in flight is answered 409 at once). */
  inFlightWaitMs?: number;
  /** REDIS_URL: the Redis fast path on. */
  redisUrl?: string;
  /** More environment for both apps (the webhook model's secret and processing bound). */
  env?: Record<string, string>;
  /**
   * PAYMENT_PROVIDER=stripe: both apps on the Stripe adapter, talking HTTP to
   * this fake (started by the caller), its outages played as Stripe's faults.
   */
  stripe?: StripeFake;
}

const STRIPE_WEBHOOK_SECRET = 'whsec_model0123456789abcdef';

/**
 * The system under test of the model-based suite: two real AppModules on one
 * store (on the emulator, through the serializing proxy), one manual clock,
 * and per instance the real payment simulator with test controls (outages,
 * a latch at the provider call) and a fault injector that throws at a crash
 * point - the database is left exactly as a crash there would leave it.
 */
export class ProtocolSystem {
  readonly zombies: Zombie[] = [];
  /** Requests sent and not answered yet: none may outlive the run that sent it. */
  private inFlight = 0;

  private constructor(
    readonly instances: Instance[],
    readonly clock: ManualClock,
    private readonly dbName: string,
    private readonly fake: StripeFake | null,
  ) {}

  static async start(dbName: string, options: SystemOptions = {}): Promise<ProtocolSystem> {
    const gateway = options.gateway ?? ControllableGateway;
    const fake = options.stripe ?? null;
    const clock = new ManualClock();
    const instances: Instance[] = [];
    const stripeEnv: Record<string, string> = fake
      ? {
          PAYMENT_PROVIDER: 'stripe',
          STRIPE_SECRET_KEY: 'sk_test_fake0123456789',
          STRIPE_WEBHOOK_SECRET,
          STRIPE_API_BASE: `http://127.0.0.1:${fake.port}`,
          // No retries of the SDK's own but its one replay of a closed connection: each fault the model plays reaches the adapter.
          STRIPE_MAX_NETWORK_RETRIES: '0',
          STRIPE_RETRY_AFTER_SECONDS: '1',
        }
      : {};
    for (let i = 0; i < 2; i++) {
      const faults = new ThrowingFaultInjector();
      const t = await startApp({
        dbName,
        keepData: i > 0,
        env: {
          IDEMPOTENCY_LOCK_TIMEOUT_MS: String(SETTINGS.leaseMs),
          IDEMPOTENCY_TTL_SECONDS: String(SETTINGS.ttlSeconds),
          IDEMPOTENCY_IN_FLIGHT_WAIT_MS: String(options.inFlightWaitMs ?? 0),
          IDEMPOTENCY_RESUME_WINDOW_MS: String(SETTINGS.resumeWindowMs),
          IDEMPOTENCY_TOMBSTONE_SECONDS: String(SETTINGS.tombstoneSeconds),
          ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
          ...stripeEnv,
          ...options.env,
        },
        override: (builder) => {
          const clocked = builder.overrideProvider(Clock).useValue(clock).overrideProvider(FaultInjector).useValue(faults);
          return fake
            ? clocked.overrideProvider(PaymentGateway).useFactory({
                factory: (inner: StripePaymentGateway) => new ControllableStripeGateway(inner, fake),
                inject: [StripePaymentGateway],
              })
            : clocked.overrideProvider(PaymentGateway).useClass(gateway);
        },
      });
      const controllable = t.app.get(PaymentGateway) as ControllableGateway | ControllableStripeGateway;
      // A crash is a crash: the dead worker never gives its lease back.
      installCrashStandIn(t.app, faults, controllable instanceof ControllableGateway ? controllable : undefined);
      instances.push({ t, faults, gateway: controllable, reaper: t.app.get(IdempotencyReaper) });
    }
    return new ProtocolSystem(instances, clock, dbName, fake);
  }

  /** Which adapter is behind the port. */
  get provider(): 'simulator' | 'stripe' {
    return this.fake ? 'stripe' : 'simulator';
  }

  /** The simulator's own controls (settling asynchronous charges): only with the simulator behind the port. */
  simulator(instance: number): ControllableGateway {
    const gateway = this.instances[instance].gateway;
    if (!(gateway instanceof ControllableGateway)) throw new Error('this model needs the simulator behind the port');
    return gateway;
  }

  /**
   * The provider's books as the invariant checker reads them (`charges`,
   * `operations`): the simulator's own database, or the Stripe fake's
   * PaymentIntents and Refunds exported into a scratch one.
   */
  async books(): Promise<Db> {
    if (!this.fake) return this.primary.simulatorDb;
    const books = this.primary.db.client.db(`${this.dbName}_books`);
    await exportBooks(this.fake, books);
    return books;
  }

  /** What the Stripe fake found off Stripe's published OpenAPI in the adapter's requests or its own answers (taken: each is told once). */
  providerViolations(): string[] {
    return this.fake ? this.fake.violations.splice(0).map((violation) => `Stripe OpenAPI: ${violation}`) : [];
  }

  /** The payment token of a test card by what it does: the simulator's names, or the Stripe test card's (tok_x -> pm_card_x). */
  paymentToken(card: 'tok_visa' | 'tok_refund_decline'): string {
    if (!this.fake || card === 'tok_visa') return card;
    return 'tok_refundFail';
  }

  get primary(): TestApp {
    return this.instances[0].t;
  }

  send(instance: number, key: string, body: object): Promise<Reply> {
    return this.request(instance, 'post', '/v1/orders', { key, body });
  }

  /** Any request, keyed or not: a create (send()), or the money operations after one. */
  async request(instance: number, method: 'get' | 'post', path: string, options: { key?: string; body?: object } = {}): Promise<Reply> {
    this.inFlight++;
    let res: Awaited<ReturnType<ReturnType<TestApp['http']>['post']>>;
    try {
      let req = this.instances[instance].t.http()[method](path).set(auth());
      if (options.key !== undefined) req = req.set('Idempotency-Key', options.key);
      res = await (method === 'post' ? req.send(options.body ?? {}) : req);
    } finally {
      this.inFlight--;
    }
    const header = (name: string) => (res.headers[name] as string | undefined) ?? undefined;
    return {
      status: res.status,
      body: res.text,
      replayed: res.headers['idempotent-replayed'] === 'true',
      location: header('location'),
      retryAfter: header('retry-after'),
    };
  }

  /** Non-zero series of the metrics the README says must stay 0, on every instance. */
  async mustStayZero(): Promise<string[]> {
    const found: string[] = [];
    for (const { t } of this.instances) {
      const text = await t.app.get(MetricsService).registry.metrics();
      for (const line of text.split('\n')) {
        if (/^idempotency_(duplicate_creations|state_conflicts)_total\S* [1-9]/.test(line)) found.push(line);
      }
    }
    return found;
  }

  /**
   * Sends with the provider call held: resolves with a zombie once the
   * request waits there, or with its reply if it never reached the provider
   * (a replay, a 409, a 422).
   */
  async sendAndHold(instance: number, key: string, body: object, variant: number, phase: 'before' | 'after'): Promise<Zombie | Reply> {
    const { gateway } = this.instances[instance];
    const hold = gateway.holdNextCharge(phase);
    const reply = this.send(instance, key, body);
    const first = await Promise.race([hold.reached, reply]);
    if (typeof first !== 'string') {
      gateway.cancelHold();
      return first;
    }
    // The charge held must be this request's own: anything else is a request that outlived its run.
    const order = await this.primary.db.collection<{ idempotency: { recordId: string } }>('orders').findOne({ _id: first as never });
    if (!order?.idempotency.recordId.endsWith(`:key:${key}`)) throw new Error(`the hold for ${key} caught the charge of order ${first}`);
    const zombie = { instance, key, variant, release: hold.release, reply };
    this.zombies.push(zombie);
    return zombie;
  }

  async resume(index: number): Promise<{ zombie: Zombie; reply: Reply }> {
    const [zombie] = this.zombies.splice(index, 1);
    zombie.release();
    return { zombie, reply: await zombie.reply };
  }

  armCrash(instance: number, point: FaultPoint): void {
    this.instances[instance].faults.crashOnceAt(point);
  }

  /** True when the armed crash fired during the last request (and disarms it otherwise). */
  crashed(instance: number): boolean {
    return this.instances[instance].faults.consumeFired();
  }

  providerOutage(on: boolean): void {
    for (const { gateway } of this.instances) gateway.failNext(on ? Number.MAX_SAFE_INTEGER : 0);
  }

  reap(instance: number): Promise<ReaperRun> {
    return this.instances[instance].reaper.runOnce();
  }

  /**
   * The frozen clock ticks a millisecond before and after an erasure, as a
   * real one would between commands: the model orders commands, and requests
   * sent before or after must not share the erasure's millisecond (a tie
   * counts as received before it). `tick: false` keeps the tie.
   */
  async erase(customerId: string, { tick = true }: { tick?: boolean } = {}): Promise<number> {
    if (tick) this.clock.advance(1);
    const res = await this.primary.http().delete(`/v1/customers/${customerId}/data`).set(auth());
    if (tick) this.clock.advance(1);
    return res.status;
  }

  /** Lets every zombie finish, ends the outage, and lets time pass until the reaper settles everything. */
  async drain(): Promise<Reply[]> {
    this.providerOutage(false);
    for (const { faults } of this.instances) faults.reset();
    const replies: Reply[] = [];
    while (this.zombies.length > 0) replies.push((await this.resume(0)).reply);
    // Past every lease and every resume window: an attempt released after an outage and never retried is the reaper's too.
    this.clock.advance(Math.max(SETTINGS.leaseMs, SETTINGS.resumeWindowMs) + 1);
    for (let pass = 0; pass < 2; pass++) for (let i = 0; i < this.instances.length; i++) await this.reap(i);
    return replies;
  }

  async reset(): Promise<void> {
    await this.drain();
    // A run that failed half-way may leave a request held at the provider or still running: let it finish
    // before the store is emptied, or it would write into the next run.
    for (let wait = 0; wait < 500 && (this.inFlight > 0 || this.instances.some(({ gateway }) => gateway.held > 0)); wait++) {
      for (const { gateway } of this.instances) gateway.releaseAll();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (this.inFlight > 0) throw new Error(`${this.inFlight} requests still in flight after the run`);
    for (const instance of this.instances) {
      instance.gateway.reset();
      instance.faults.reset();
      instance.t.app.get(MetricsService).registry.resetMetrics();
    }
    this.clock.reset();
    await this.primary.reset();
    if (this.fake) {
      this.fake.reset();
      await this.primary.db.collection('stripe_requests').deleteMany({});
    }
  }

  async close(): Promise<void> {
    // A held request would keep its app from closing.
    await this.drain().catch(() => undefined);
    for (const instance of this.instances) await instance.t.close();
  }
}
