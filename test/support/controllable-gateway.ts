import { Injectable } from '@nestjs/common';
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
  private latch: { reached: () => void; release: Promise<void> } | null = null;

  failNext(count: number): void {
    this.outages = count;
  }

  crashAfterNextCharge(): void {
    this.crashes = 1;
  }

  /** The next charge call waits; `reached` resolves when it is waiting, `release()` lets it go on. */
  holdNextCharge(): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
    this.latch = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: reachedPromise, release };
  }

  override async charge(request: ChargeRequest): Promise<ChargeResult> {
    this.calls++;
    if (this.latch) {
      const latch = this.latch;
      this.latch = null;
      latch.reached();
      await latch.release;
    }
    if (this.outages > 0) {
      this.outages--;
      throw new PaymentProviderUnavailableError(1);
    }
    const result = await super.charge(request);
    if (this.crashes > 0) {
      this.crashes--;
      throw new SimulatedCrash();
    }
    return result;
  }
}
