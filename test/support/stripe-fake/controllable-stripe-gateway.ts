import {
  PaymentGateway,
  type AsyncChargeResult,
  type AuthorizeResult,
  type CaptureRequest,
  type ChargeRequest,
  type ChargeResult,
  type OperationResult,
  type ReconcileResult,
  type RefundRequest,
  type VoidRequest,
} from '../../../src/payments/payment-gateway.port.js';
import type { StripePaymentGateway } from '../../../src/payment-stripe/stripe-payment.gateway.js';
import type { OperationCall } from '../controllable-gateway.js';
import type { Fault, StripeFake } from './stripe-fake.js';
import { holdAt, type Latch } from '../latch.js';

/** What an outage the test asked for did at Stripe: the fault the fake played, and whether the money moved behind it. */
export interface OutageEffect {
  key: string;
  fault: Fault;
  /** Stripe executed the request (a lost answer, a 5xx after it): the money moved - or was refused - though no answer came. */
  moved: boolean;
  /** The adapter got through to the truth anyway (it found the object behind a stored 5xx): the caller had its answer. */
  absorbed: boolean;
}

/** The endpoint each call kind POSTs to: a fault is aimed at it alone. */
const ENDPOINTS: Record<OperationCall, RegExp> = {
  authorize: /^\/v1\/payment_intents$/,
  capture: /^\/v1\/payment_intents\/[^/]+\/capture$/,
  void: /^\/v1\/payment_intents\/[^/]+\/cancel$/,
  refund: /^\/v1\/refunds$/,
};

/**
 * Stripe's faults, in turn: Stripe down (nothing executed), another copy in
 * flight (409, nothing executed), the answer lost twice - the SDK replays a
 * closed connection once - after Stripe executed it, and a 5xx Stripe
 * stores under the key after the money moved.
 */
const NEW_REQUEST_FAULTS: Fault[] = ['unavailable', 'lose_answer', 'in_flight', 'server_error_after'];
/** A key Stripe already holds answers the stored answer to anything but an outage or a lost connection. */
const REPLAY_FAULTS: Fault[] = ['unavailable', 'lose_answer'];

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h;
}

/**
 * The Stripe adapter with the model's test controls (the same ones
 * ControllableGateway gives the simulator: counts, outages, latches), for
 * the model-based run on Stripe. The adapter is the real one, talking HTTP
 * to the fake; an outage is not a 503 made up here but one of Stripe's own
 * faults played by the fake on that call's endpoint - so a lost answer or a
 * 5xx after the money moved reaches the adapter as it would from Stripe,
 * and `lastOutage` tells the model what it did.
 */
export class ControllableStripeGateway extends PaymentGateway {
  operationCalls: Record<OperationCall, number> = { authorize: 0, capture: 0, void: 0, refund: 0 };
  lastOutage: OutageEffect | null = null;
  /** Faults played since the gateway was made (never reset): the run's summary shows that each one happened. */
  readonly faultsPlayed: Partial<Record<Fault, number>> = {};
  private readonly outages: Record<OperationCall, number> = { authorize: 0, capture: 0, void: 0, refund: 0 };
  private chargeOutages = 0;
  /** Faults to play next, in order, before any chosen by hash: a regression row pins the one it was found with. */
  readonly nextFaults: Fault[] = [];
  private played = 0;
  private readonly latches = new Map<OperationCall | 'charge', Latch>();
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly inner: StripePaymentGateway,
    private readonly fake: StripeFake,
  ) {
    super();
  }

  reset(): void {
    for (const kind of Object.keys(this.operationCalls) as OperationCall[]) {
      this.operationCalls[kind] = 0;
      this.outages[kind] = 0;
    }
    this.chargeOutages = 0;
    this.played = 0;
    this.nextFaults.length = 0;
    this.lastOutage = null;
    this.latches.clear();
  }

  /** The next `count` calls of this kind meet one of Stripe's faults (in turn: NEW_REQUEST_FAULTS). */
  failNextOperations(kind: OperationCall, count: number): void {
    this.outages[kind] = count;
    if (count > 0) this.lastOutage = null;
  }

  /** The next `count` charges find Stripe down (503, nothing executed). */
  failNext(count: number): void {
    this.chargeOutages = count;
  }

  holdNextOperation(kind: OperationCall, phase: 'before' | 'after' = 'before'): { reached: Promise<string>; release: () => void } {
    return this.arm(kind, phase);
  }

  holdNextCharge(phase: 'before' | 'after' = 'before'): { reached: Promise<string>; release: () => void } {
    return this.arm('charge', phase);
  }

  cancelHold(): void {
    this.latches.delete('charge');
  }

  get held(): number {
    return this.waiting.size;
  }

  releaseAll(): void {
    for (const release of this.waiting) release();
  }

  charge(request: ChargeRequest): Promise<ChargeResult> {
    return this.chargeControlled(request, () => this.inner.charge(request));
  }

  authorize(request: ChargeRequest): Promise<AuthorizeResult> {
    return this.chargeControlled(request, () => this.inner.authorize(request));
  }

  chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    return this.inner.chargeOrCancel(chargeKey);
  }

  processingOrCancel(chargeKey: string): Promise<AsyncChargeResult> {
    return this.inner.processingOrCancel(chargeKey);
  }

  capture(request: CaptureRequest): Promise<OperationResult> {
    return this.controlled('capture', request.captureKey, `${request.amountMinor}`, () => this.inner.capture(request));
  }

  void(request: VoidRequest): Promise<OperationResult> {
    return this.controlled('void', request.voidKey, '', () => this.inner.void(request));
  }

  refund(request: RefundRequest): Promise<OperationResult> {
    return this.controlled('refund', request.refundKey, `${request.amountMinor} ${request.currency}`, () => this.inner.refund(request));
  }

  operationOrCancel(key: string): Promise<OperationResult> {
    return this.inner.operationOrCancel(key);
  }

  private async chargeControlled<T>(request: ChargeRequest, call: () => Promise<T>): Promise<T> {
    const latch = this.take('charge');
    if (latch?.phase === 'before') await this.wait(latch, request.reference);
    if (this.chargeOutages > 0) {
      this.chargeOutages--;
      this.fake.inject('unavailable', ENDPOINTS.authorize);
    }
    const result = await call();
    if (latch?.phase === 'after') await this.wait(latch, request.reference);
    return result;
  }

  /** `what`: the call's amount and currency, which choose its fault with the count (keys hold random ids). */
  private async controlled<T>(kind: OperationCall, key: string, what: string, call: () => Promise<T>): Promise<T> {
    this.operationCalls[kind]++;
    const latch = this.take(kind);
    if (latch?.phase === 'before') await this.wait(latch, key);
    if (this.outages[kind] === 0) {
      const result = await call();
      if (latch?.phase === 'after') await this.wait(latch, key);
      return result;
    }
    this.outages[kind]--;
    const replay = this.fake.holds(key);
    const faults = replay ? REPLAY_FAULTS : NEW_REQUEST_FAULTS;
    // Which fault: the one a regression row asks for, else a hash of the call's kind, amount and currency and of how
    // many this run played - the same commands replay the same faults (MODEL_SEED/MODEL_PATH; the keys hold random
    // ids), and a run's first outage is not always the same one.
    const fault = this.nextFaults.shift() ?? faults[hash(`${kind}#${what}#${this.played}`) % faults.length];
    this.played++;
    this.faultsPlayed[fault] = (this.faultsPlayed[fault] ?? 0) + 1;
    // A lost answer is lost twice: the SDK replays a closed connection once, under the same key.
    const times = fault === 'lose_answer' ? 2 : 1;
    for (let i = 0; i < times; i++) this.fake.inject(fault, ENDPOINTS[kind]);
    const effect: OutageEffect = {
      key,
      fault,
      moved: !replay && (fault === 'lose_answer' || fault === 'server_error_after'),
      absorbed: false,
    };
    this.lastOutage = effect;
    try {
      const result = await call();
      effect.absorbed = true;
      return result;
    } finally {
      // A fault the call never met (the adapter answered before it sent) must not fall on a later call.
      this.fake.clearFaults();
    }
  }

  private arm(kind: OperationCall | 'charge', phase: 'before' | 'after'): { reached: Promise<string>; release: () => void } {
    let release!: () => void;
    let reached!: (key: string) => void;
    const reachedPromise = new Promise<string>((resolve) => (reached = resolve));
    this.latches.set(kind, { phase, reached, release: new Promise<void>((resolve) => (release = resolve)) });
    return { reached: reachedPromise, release };
  }

  /** A latch holds one call: the first that comes takes it. */
  private take(kind: OperationCall | 'charge'): Latch | undefined {
    const latch = this.latches.get(kind);
    this.latches.delete(kind);
    return latch;
  }

  private wait(latch: Latch, key: string): Promise<void> {
    return holdAt(latch, key, this.waiting);
  }
}
