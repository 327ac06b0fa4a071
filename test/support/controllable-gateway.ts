import { Injectable, type INestApplicationContext } from '@nestjs/common';
import type { Db } from 'mongodb';
import type { FaultPoint } from '../../src/config/configuration.js';
import { IdempotencyRecordRepository } from '@idempotent-orders/nest-idempotency/testing';
import {
  PaymentProviderUnavailableError,
  type AuthorizeResult,
  type CaptureRequest,
  type ChargeRequest,
  type ChargeResult,
  type OperationResult,
  type ReconcileResult,
  type RefundRequest,
  type VoidRequest,
} from '../../src/payments/payment-gateway.port.js';

/** The provider calls after a charge that a test can count, fail or hold (one latch per kind). */
export type OperationCall = 'authorize' | 'capture' | 'void' | 'refund';

import { SimulatedPaymentGateway } from '../../src/payment-simulator/simulated-payment.gateway.js';
import { holdAt, type Latch } from './latch.js';

export class SimulatedCrash extends Error {
  constructor(where = 'after the provider charged') {
    super(`simulated crash ${where}`);
  }
}

/**
 * The real simulator (its charges are real documents) with test controls:
 * an outage for the next N calls, a crash right after the provider charged,
 * and a latch that holds a charge call until the test releases it.
 */
@Injectable()
export class ControllableGateway extends SimulatedPaymentGateway {
  calls = 0;
  /** Reconciliations (the reaper's charge-or-cancel) that reached the provider. */
  reconciles = 0;
  /** Set by installCrashStandIn: a crash here is a dead worker too (no release follows it). */
  onCrash: () => void = () => undefined;
  private outages = 0;
  private crashes = 0;
  private latch: { phase: 'before' | 'after'; reached: (reference: string) => void; release: Promise<void> } | null = null;
  /** Charge calls waiting at a latch right now, with what lets each go on. */
  private readonly waiting = new Set<() => void>();

  /** Calls per operation kind that reached the gateway (failed ones included). */
  operationCalls: Record<OperationCall, number> = { authorize: 0, capture: 0, void: 0, refund: 0 };
  /** The reaper's operationOrCancel calls. */
  operationLookups = 0;
  private readonly operationOutages: Record<OperationCall, number> = { authorize: 0, capture: 0, void: 0, refund: 0 };
  private readonly operationCrashes: Record<OperationCall, number> = { authorize: 0, capture: 0, void: 0, refund: 0 };
  private readonly operationLatches = new Map<OperationCall, Latch>();

  reset(): void {
    this.calls = 0;
    this.reconciles = 0;
    this.outages = 0;
    this.crashes = 0;
    this.latch = null;
    this.operationLookups = 0;
    for (const kind of Object.keys(this.operationCalls) as OperationCall[]) {
      this.operationCalls[kind] = 0;
      this.operationOutages[kind] = 0;
      this.operationCrashes[kind] = 0;
    }
    this.operationLatches.clear();
  }

  /** The next `count` calls of this kind answer 503 without reaching the provider. */
  failNextOperations(kind: OperationCall, count: number): void {
    this.operationOutages[kind] = count;
  }

  /** The next call of this kind reaches the provider, which acts, then the worker dies before recording it. */
  crashAfterNextOperation(kind: OperationCall): void {
    this.operationCrashes[kind] = 1;
  }

  /**
   * The next call of this kind waits, before the provider acts or after;
   * `reached` resolves with the call's key when it waits, `release()` lets it go on.
   */
  holdNextOperation(kind: OperationCall, phase: 'before' | 'after' = 'before'): { reached: Promise<string>; release: () => void } {
    let release!: () => void;
    let reached!: (key: string) => void;
    const reachedPromise = new Promise<string>((resolve) => (reached = resolve));
    this.operationLatches.set(kind, { phase, reached, release: new Promise<void>((resolve) => (release = resolve)) });
    return { reached: reachedPromise, release };
  }

  override authorize(request: ChargeRequest): Promise<AuthorizeResult> {
    return this.controlled('authorize', request.chargeKey, () => super.authorize(request));
  }

  override capture(request: CaptureRequest): Promise<OperationResult> {
    return this.controlled('capture', request.captureKey, () => super.capture(request));
  }

  override void(request: VoidRequest): Promise<OperationResult> {
    return this.controlled('void', request.voidKey, () => super.void(request));
  }

  override refund(request: RefundRequest): Promise<OperationResult> {
    return this.controlled('refund', request.refundKey, () => super.refund(request));
  }

  override async operationOrCancel(key: string): Promise<OperationResult> {
    this.operationLookups++;
    return super.operationOrCancel(key);
  }

  private async controlled<T>(kind: OperationCall, key: string, call: () => Promise<T>): Promise<T> {
    this.operationCalls[kind]++;
    // Taken by the first call that comes: a latch holds one call.
    const latch = this.operationLatches.get(kind);
    this.operationLatches.delete(kind);
    if (latch?.phase === 'before') await this.waitAtOperation(latch, key);
    if (this.operationOutages[kind] > 0) {
      this.operationOutages[kind]--;
      throw new PaymentProviderUnavailableError(1);
    }
    const result = await call();
    if (latch?.phase === 'after') await this.waitAtOperation(latch, key);
    if (this.operationCrashes[kind] > 0) {
      this.operationCrashes[kind]--;
      this.onCrash();
      throw new SimulatedCrash(`after the provider's ${kind}`);
    }
    return result;
  }

  private waitAtOperation(latch: Latch, key: string): Promise<void> {
    return holdAt(latch, key, this.waiting);
  }

  failNext(count: number): void {
    this.outages = count;
  }

  crashAfterNextCharge(): void {
    this.crashes = 1;
  }

  /**
   * The next charge call waits, before calling the provider or after the
   * provider charged; `reached` resolves when it is waiting, `release()` lets it go on.
   */
  holdNextCharge(phase: 'before' | 'after' = 'before'): { reached: Promise<string>; release: () => void } {
    let release!: () => void;
    let reached!: (reference: string) => void;
    // Resolves with the reference (order id) of the charge it holds.
    const reachedPromise = new Promise<string>((resolve) => (reached = resolve));
    this.latch = { phase, reached, release: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  }

  /** Disarms a hold that no charge call reached. */
  cancelHold(): void {
    this.latch = null;
  }

  override async chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    this.reconciles++;
    return super.chargeOrCancel(chargeKey);
  }

  override async charge(request: ChargeRequest): Promise<ChargeResult> {
    this.calls++;
    if (this.latch?.phase === 'before') await this.wait(request.reference);
    if (this.outages > 0) {
      this.outages--;
      throw new PaymentProviderUnavailableError(1);
    }
    const result = await super.charge(request);
    if (this.latch?.phase === 'after') await this.wait(request.reference);
    if (this.crashes > 0) {
      this.crashes--;
      this.onCrash();
      throw new SimulatedCrash();
    }
    return result;
  }

  /** How many charge calls wait at a latch now. */
  get held(): number {
    return this.waiting.size;
  }

  /** Lets every waiting charge call go on (what a test left held when it failed). */
  releaseAll(): void {
    for (const release of this.waiting) release();
  }

  private wait(reference: string): Promise<void> {
    const latch = this.latch!;
    this.latch = null;
    return holdAt(latch, reference, this.waiting);
  }
}

/**
 * In-process stand-in for FAULT_CRASH_AT: instead of SIGKILL it throws at
 * the armed point once. A throw alone is not a crash: the service's catch
 * would give the lease back, which a dead process never does. So, with
 * installCrashStandIn, the release that follows a simulated crash is
 * skipped (and counted): the database is left exactly as a SIGKILL there
 * would leave it - a live lease nobody holds, honoured until it expires.
 * The real-process version is exercised by the chaos tests.
 */
export class ThrowingFaultInjector {
  private armed: string | null = null;
  private fired = false;
  /** Crashes whose worker's own clean-up (the release in the service's catch) is still to be skipped. */
  private dying = 0;
  /** Releases skipped because their worker had crashed: what a dead process never ran. */
  releasesSkipped = 0;

  crashOnceAt(point: FaultPoint): void {
    this.armed = point;
  }

  reset(): void {
    this.armed = null;
    this.fired = false;
    this.dying = 0;
    this.releasesSkipped = 0;
  }

  /**
   * The worker that just crashed is dead: its release is skipped. The catch
   * that would run it is reached within the same turn of the event loop
   * (only promise continuations lie between the throw and the release), so
   * the mark ends with the turn and never touches another request's release.
   */
  markDead(): void {
    this.dying++;
    setImmediate(() => (this.dying = 0));
  }

  /** The release seam (installCrashStandIn): true when this release is a dead worker's and must not happen. */
  skipRelease(): boolean {
    if (this.dying === 0) return false;
    this.dying--;
    this.releasesSkipped++;
    return true;
  }

  /** Whether the armed crash fired since the last call; an unfired one is disarmed. */
  consumeFired(): boolean {
    const fired = this.fired;
    this.armed = null;
    this.fired = false;
    return fired;
  }

  crashIf(point: FaultPoint): void {
    if (this.armed !== point) return;
    this.armed = null;
    this.fired = true;
    // before-response is after the work: no release follows it, so there is nothing to skip.
    if (point !== 'before-response') this.markDead();
    throw new SimulatedCrash(`at ${point}`);
  }
}

/**
 * Makes the in-process crash a crash (audit F8): the lease release in the
 * catch of IdempotencyService.drive and IdempotencyReaper.reap - the only
 * clean-up a request or a reaper pass makes after its work threw - is
 * skipped when the throw was a simulated crash. Test code only; the
 * production FaultInjector SIGKILLs the process, which skips it for real.
 */
export function installCrashStandIn(app: INestApplicationContext, faults: ThrowingFaultInjector, gateway?: ControllableGateway): void {
  const records = app.get(IdempotencyRecordRepository);
  const release = records.release.bind(records);
  records.release = (...args: Parameters<IdempotencyRecordRepository['release']>) =>
    faults.skipRelease() ? Promise.resolve(false) : release(...args);
  if (gateway) gateway.onCrash = () => faults.markDead();
}

/** For an app booted with the ControllableGateway but the real FaultInjector: its gateway's crashes leave their lease held. */
export function withCrashStandIn(app: INestApplicationContext, gateway: ControllableGateway): ThrowingFaultInjector {
  const faults = new ThrowingFaultInjector();
  installCrashStandIn(app, faults, gateway);
  return faults;
}

/**
 * Pending records whose lease runs its full term (expiresAt - lockedAt =
 * lockTimeoutMs): nobody gave it back, as after a real crash. A released
 * lease ends at the moment of the release instead.
 */
export async function heldLeases(db: Db, lockTimeoutMs: number): Promise<number> {
  const pending = await db
    .collection<{ lease: { lockedAt: Date; expiresAt: Date } | null }>('idempotency_records')
    .find({ status: 'pending' })
    .toArray();
  return pending.filter((record) => record.lease && record.lease.expiresAt.getTime() - record.lease.lockedAt.getTime() === lockTimeoutMs)
    .length;
}
