import { Injectable } from '@nestjs/common';
import type { FaultPoint } from '../../src/config/configuration.js';
import { PaymentProviderUnavailableError, type ChargeRequest, type ChargeResult } from '../../src/payments/payment-gateway.port.js';
import { SimulatedPaymentGateway } from '../../src/payments/simulated-payment.gateway.js';

export class SimulatedCrash extends Error {
  constructor() {
    super('simulated crash after the provider charged');
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
  private outages = 0;
  private crashes = 0;
  private latch: { phase: 'before' | 'after'; reached: () => void; release: Promise<void> } | null = null;

  reset(): void {
    this.calls = 0;
    this.outages = 0;
    this.crashes = 0;
    this.latch = null;
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
  holdNextCharge(phase: 'before' | 'after' = 'before'): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.latch = { phase, reached, release: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  }

  /** Disarms a hold that no charge call reached. */
  cancelHold(): void {
    this.latch = null;
  }

  override async charge(request: ChargeRequest): Promise<ChargeResult> {
    this.calls++;
    if (this.latch?.phase === 'before') await this.wait();
    if (this.outages > 0) {
      this.outages--;
      throw new PaymentProviderUnavailableError(1);
    }
    const result = await super.charge(request);
    if (this.latch?.phase === 'after') await this.wait();
    if (this.crashes > 0) {
      this.crashes--;
      throw new SimulatedCrash();
    }
    return result;
  }

  private async wait(): Promise<void> {
    const latch = this.latch!;
    this.latch = null;
    latch.reached();
    await latch.release;
  }
}

/**
 * In-process stand-in for FAULT_CRASH_AT: instead of SIGKILL it throws at
 * the armed point once, leaving the database exactly as a crash there would
 * (the real-process version is exercised by the chaos tests).
 */
export class ThrowingFaultInjector {
  private armed: string | null = null;
  private fired = false;

  crashOnceAt(point: FaultPoint): void {
    this.armed = point;
  }

  reset(): void {
    this.armed = null;
    this.fired = false;
  }

  /** Whether the armed crash fired since the last call; an unfired one is disarmed. */
  consumeFired(): boolean {
    const fired = this.fired;
    this.reset();
    return fired;
  }

  crashIf(point: FaultPoint): void {
    if (this.armed !== point) return;
    this.armed = null;
    this.fired = true;
    throw new SimulatedCrash();
  }
}
