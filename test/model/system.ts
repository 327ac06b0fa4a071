import type { Type } from '@nestjs/common';
import { Clock } from '../../src/common/clock.js';
import { FaultInjector } from '../../src/common/fault-injector.js';
import type { FaultPoint } from '../../src/config/configuration.js';
import { IdempotencyReaper, type ReaperRun } from '@idempotent-orders/nest-idempotency';
import { PaymentGateway } from '../../src/payments/payment-gateway.port.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { ControllableGateway, installCrashStandIn, ThrowingFaultInjector } from '../support/controllable-gateway.js';
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

export interface Instance {
  t: TestApp;
  gateway: ControllableGateway;
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
}

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
  ) {}

  static async start(dbName: string, options: SystemOptions = {}): Promise<ProtocolSystem> {
    const gateway = options.gateway ?? ControllableGateway;
    const clock = new ManualClock();
    const instances: Instance[] = [];
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
          ...options.env,
        },
        override: (builder) =>
          builder
            .overrideProvider(Clock)
            .useValue(clock)
            .overrideProvider(PaymentGateway)
            .useClass(gateway)
            .overrideProvider(FaultInjector)
            .useValue(faults),
      });
      const controllable = t.app.get(PaymentGateway) as ControllableGateway;
      // A crash is a crash: the dead worker never gives its lease back.
      installCrashStandIn(t.app, faults, controllable);
      instances.push({ t, faults, gateway: controllable, reaper: t.app.get(IdempotencyReaper) });
    }
    return new ProtocolSystem(instances, clock);
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
  }

  async close(): Promise<void> {
    // A held request would keep its app from closing.
    await this.drain().catch(() => undefined);
    for (const instance of this.instances) await instance.t.close();
  }
}
