import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { randomUUID } from 'node:crypto';
import type { ClientSession, Collection, MongoClient } from 'mongodb';
import type { Connection } from 'mongoose';
import { paymentsConfig, type PaymentsConfig } from '../config/config.tokens.js';
import { isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import { MetricsService } from '../metrics/metrics.service.js';
import { chargeEvent, type ChargeFacts } from './webhook-events.js';
import { SimulatedWebhookSender } from './webhook-sender.js';
import {
  PaymentGateway,
  PaymentProviderUnavailableError,
  type Authorization,
  type AsyncChargeResult,
  type AuthorizeResult,
  type CaptureRequest,
  type Charge,
  type ChargeRequest,
  type ChargeResult,
  type OperationKind,
  type OperationResult,
  type ReconcileResult,
  type RefundRequest,
  type RefusalReason,
  type VoidRequest,
} from '../payments/payment-gateway.port.js';

/** Reads of a charge key that already exists: about 1.5 s in all before giving up. */
const EXISTING_READ_ATTEMPTS = 5;
const EXISTING_READ_BACKOFF_MS = 100;

/** Test tokens, like a provider's test cards. */
export const TEST_TOKENS = {
  succeeds: 'tok_visa',
  declines: 'tok_decline',
  unavailable: 'tok_provider_down',
  /** Charges at once; every refund of it is declined by the issuer. */
  refundDeclines: 'tok_refund_decline',
  /** Charges at once; every refund of it finds the provider down (nothing stored, retry). */
  refundUnavailable: 'tok_refund_down',
  /** Manual capture: the authorization has already lapsed when it is granted. */
  authorizationExpires: 'tok_auth_expires',
  /** The provider answers `processing`; the outcome comes later (settleProcessing, by webhook). */
  asynchronous: 'tok_async',
  /** Like tok_async, and when the simulator settles it on its own (PAYMENT_SIMULATOR_ASYNC_SETTLE_MS), it declines. */
  asynchronousDeclines: 'tok_async_decline',
  /** A bank transfer: asynchronous like tok_async, but it cannot be canceled while processing (processingOrCancel: still_processing). */
  bankTransfer: 'tok_bank_transfer',
} as const;

type ChargeStatus = 'succeeded' | 'authorized' | 'processing' | 'declined' | 'captured' | 'voided' | 'canceled';

/**
 * One document per charge key: what the provider did under it. A charge
 * (`succeeded`), an authorization (`authorized`, then `captured` or
 * `voided`), an asynchronous charge (`processing`, then `succeeded` or
 * `declined`), or the tombstone of a canceled key.
 */
interface ChargeDoc {
  _id: string;
  status: ChargeStatus;
  id: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
  /** Kept to play the test tokens' later behaviour (refunds); absent on documents of older releases. */
  paymentToken?: string;
  /** Authorizations only. */
  expiresAt?: Date;
  /** Asynchronous charges: when the provider decided (succeeded, declined, or canceled by processingOrCancel). */
  settledAt?: Date;
  /** What was taken: the amount of a charge, the capture of an authorization. */
  capturedMinor?: number;
  /** Authorizations: when they were captured (a statement lists a capture then); absent on documents of older releases. */
  capturedAt?: Date;
  refundedMinor?: number;
}

/** One document per capture, void or refund key: what was done, refused, or the tombstone of a canceled key. */
interface OperationDoc {
  _id: string;
  kind: OperationKind | null;
  status: 'succeeded' | 'refused' | 'canceled';
  reason: RefusalReason | null;
  id: string;
  chargeKey: string | null;
  amountMinor: number;
  currency: string;
  createdAt: Date;
}

/**
 * Stands in for an external provider: its charges live in their own
 * database and are written outside our transactions (its side effect commits
 * on its own), and it deduplicates on every key like Stripe's
 * Idempotency-Key. Latency comes from PAYMENT_SIMULATOR_LATENCY_MS.
 *
 * Charges are one insert per key (first writer wins). Captures, voids and
 * refunds read and change the charge they name, so each runs in one
 * transaction of the simulator's own database - the atomicity a real
 * provider has, which the two-document change needs: the operation's
 * record under its key and the charge it changes commit together.
 */
@Injectable()
export class SimulatedPaymentGateway extends PaymentGateway implements OnApplicationShutdown {
  private readonly charges: Collection<ChargeDoc>;
  /** Charges waiting to be settled on their own (PAYMENT_SIMULATOR_ASYNC_SETTLE_MS), by charge key. */
  private readonly settling = new Map<string, NodeJS.Timeout>();
  private readonly operations: Collection<OperationDoc>;
  private readonly client: MongoClient;

  constructor(
    @InjectConnection() connection: Connection,
    @Inject(paymentsConfig.KEY) private readonly config: PaymentsConfig,
    private readonly metrics: MetricsService,
    private readonly webhooks: SimulatedWebhookSender,
  ) {
    super();
    const db = connection.useDb(config.simulatorDbName, { useCache: true });
    this.charges = db.collection<ChargeDoc>('charges');
    this.operations = db.collection<OperationDoc>('operations');
    this.client = connection.getClient();
  }

  async charge(request: ChargeRequest): Promise<ChargeResult> {
    const stored = await this.open(request, 'charge');
    if (stored === 'declined') return { outcome: 'declined', reason: 'card_declined' };
    switch (stored.status) {
      case 'canceled':
        return { outcome: 'canceled' };
      case 'processing':
        this.webhooks.send(chargeEvent('charge.processing', factsOf(stored), stored.createdAt));
        this.settleLater(stored);
        return { outcome: 'processing' };
      case 'declined':
        return { outcome: 'declined', reason: 'card_declined' };
      case 'succeeded':
        this.metrics.paymentCharges.inc({ result: 'succeeded' });
        return { outcome: 'succeeded', charge: toCharge(stored) };
      default:
        throw new Error(`Charge key ${request.chargeKey} holds an authorization (${stored.status}), not a charge`);
    }
  }

  async authorize(request: ChargeRequest): Promise<AuthorizeResult> {
    const stored = await this.open(request, 'authorize');
    if (stored === 'declined') return { outcome: 'declined', reason: 'card_declined' };
    if (stored.status === 'canceled') return { outcome: 'canceled' };
    if (!stored.expiresAt) throw new Error(`Charge key ${request.chargeKey} holds a charge (${stored.status}), not an authorization`);
    this.metrics.paymentCharges.inc({ result: 'authorized' });
    return { outcome: 'authorized', authorization: toAuthorization(stored) };
  }

  onApplicationShutdown(): void {
    for (const timer of this.settling.values()) clearTimeout(timer);
    this.settling.clear();
  }

  /**
   * Like a real provider, decide an asynchronous charge on its own a while
   * later (and send its webhook); once per charge, and only when configured:
   * the tests settle by hand.
   */
  private settleLater(charge: ChargeDoc): void {
    if (this.config.asyncSettleMs <= 0 || this.settling.has(charge._id)) return;
    const outcome = charge.paymentToken === TEST_TOKENS.asynchronousDeclines ? 'declined' : 'succeeded';
    const timer = setTimeout(() => {
      this.settling.delete(charge._id);
      // Canceled meanwhile by the processing bound, or the store gone at shutdown: nothing to settle.
      this.settleProcessing(charge._id, outcome).catch(() => undefined);
    }, this.config.asyncSettleMs);
    timer.unref();
    this.settling.set(charge._id, timer);
  }

  async chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    const stored = await this.insertOrGet({
      _id: chargeKey,
      status: 'canceled',
      id: `cx_${randomId()}`,
      amountMinor: 0,
      currency: 'XXX',
      createdAt: new Date(),
    });
    switch (stored.status) {
      case 'canceled':
        return { outcome: 'canceled' };
      case 'processing':
        return { outcome: 'processing' };
      case 'declined':
        return { outcome: 'declined', reason: 'card_declined' };
      case 'succeeded':
        return { outcome: 'charged', charge: toCharge(stored) };
      default:
        // An authorization, whatever happened to it since (capture and void are operations of their own).
        return { outcome: 'authorized', authorization: toAuthorization(stored) };
    }
  }

  /**
   * The asynchronous outcome of a `processing` charge, as the provider
   * decides it later (the webhook says so). Once only: a settled charge
   * stays as it was settled. Returns what the charge key holds now.
   */
  async settleProcessing(chargeKey: string, outcome: 'succeeded' | 'declined'): Promise<ChargeStatus | null> {
    const settled: Partial<ChargeDoc> = outcome === 'succeeded' ? { status: 'succeeded' } : { status: 'declined' };
    if (outcome === 'succeeded') {
      const charge = await this.charges.findOne({ _id: chargeKey }, { readConcern: { level: 'majority' } });
      settled.capturedMinor = charge?.amountMinor;
    }
    settled.settledAt = new Date();
    await this.charges.updateOne({ _id: chargeKey, status: 'processing' }, { $set: settled }, { writeConcern: MAJORITY });
    const stored = await this.charges.findOne({ _id: chargeKey }, { readConcern: { level: 'majority' } });
    // Told by webhook, at least once: the same outcome is the same event (its id), however often it is sent.
    if (stored?.status === 'succeeded' || stored?.status === 'declined') {
      const type = stored.status === 'succeeded' ? 'charge.succeeded' : 'charge.failed';
      this.webhooks.send(chargeEvent(type, factsOf(stored), stored.settledAt ?? new Date()));
    }
    return stored?.status ?? null;
  }

  /**
   * For an order past its processing bound: the outcome of the asynchronous
   * charge under this key, canceling it first (atomically, at the provider)
   * if it is still processing, so it can never settle afterwards.
   */
  async processingOrCancel(chargeKey: string): Promise<AsyncChargeResult> {
    await sleep(this.config.simulatorLatencyMs);
    try {
      await this.charges.updateOne(
        // A bank transfer in flight cannot be recalled: it is left processing.
        { _id: chargeKey, status: 'processing', paymentToken: { $nin: [...UNCANCELABLE_WHILE_PROCESSING] } },
        { $set: { status: 'canceled', settledAt: new Date() } },
        { writeConcern: MAJORITY },
      );
    } catch {
      throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    }
    const stored = await this.readExisting(chargeKey);
    if (stored.status === 'succeeded') return { outcome: 'succeeded', charge: toCharge(stored) };
    if (stored.status === 'declined') return { outcome: 'declined', reason: 'card_declined' };
    if (stored.status === 'processing') return { outcome: 'still_processing', method: 'bank_transfer' };
    return { outcome: 'canceled' };
  }

  capture(request: CaptureRequest): Promise<OperationResult> {
    return this.operate(request.captureKey, 'capture', request.chargeKey, async (charge, session) => {
      const refusal = authorizationRefusal(charge);
      if (refusal) return { refusal };
      if (request.amountMinor < 1 || request.amountMinor > charge.amountMinor) return { refusal: 'exceeds_captured' };
      await this.charges.updateOne(
        { _id: charge._id, status: 'authorized' },
        { $set: { status: 'captured', capturedMinor: request.amountMinor, capturedAt: new Date() } },
        { session },
      );
      return { amountMinor: request.amountMinor };
    });
  }

  void(request: VoidRequest): Promise<OperationResult> {
    return this.operate(request.voidKey, 'void', request.chargeKey, async (charge, session) => {
      const refusal = authorizationRefusal(charge);
      if (refusal) return { refusal };
      await this.charges.updateOne({ _id: charge._id, status: 'authorized' }, { $set: { status: 'voided' } }, { session });
      return { amountMinor: charge.amountMinor };
    });
  }

  refund(request: RefundRequest): Promise<OperationResult> {
    return this.operate(request.refundKey, 'refund', request.chargeKey, async (charge, session) => {
      if (charge.paymentToken === TEST_TOKENS.refundUnavailable) throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
      if (charge.status !== 'succeeded' && charge.status !== 'captured') return { refusal: 'no_such_payment' };
      if (charge.paymentToken === TEST_TOKENS.refundDeclines) return { refusal: 'declined' };
      const captured = charge.capturedMinor ?? charge.amountMinor;
      const refunded = charge.refundedMinor ?? 0;
      if (request.amountMinor < 1 || refunded + request.amountMinor > captured) return { refusal: 'exceeds_captured' };
      await this.charges.updateOne({ _id: charge._id }, { $inc: { refundedMinor: request.amountMinor } }, { session });
      return { amountMinor: request.amountMinor };
    });
  }

  async operationOrCancel(key: string): Promise<OperationResult> {
    await sleep(this.config.simulatorLatencyMs);
    return this.atomically(async (session) => {
      const existing = await this.operations.findOne({ _id: key }, { session });
      if (existing) return operationResult(existing);
      const tombstone: OperationDoc = {
        _id: key,
        kind: null,
        status: 'canceled',
        reason: null,
        id: `cx_${randomId()}`,
        chargeKey: null,
        amountMinor: 0,
        currency: 'XXX',
        createdAt: new Date(),
      };
      await this.operations.insertOne(tombstone, { session });
      return operationResult(tombstone);
    });
  }

  /** A charge or an authorization under the request's key: the test tokens first, then first writer wins. */
  private async open(request: ChargeRequest, as: 'charge' | 'authorize'): Promise<ChargeDoc | 'declined'> {
    await sleep(this.config.simulatorLatencyMs);
    if (request.paymentToken === TEST_TOKENS.unavailable) {
      this.metrics.paymentCharges.inc({ result: 'unavailable' });
      throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    }
    if (request.paymentToken === TEST_TOKENS.declines) {
      this.metrics.paymentCharges.inc({ result: 'declined' });
      return 'declined';
    }
    const now = new Date();
    const doc: ChargeDoc = {
      _id: request.chargeKey,
      status: as === 'authorize' ? 'authorized' : ASYNCHRONOUS.has(request.paymentToken) ? 'processing' : 'succeeded',
      id: `ch_${randomId()}`,
      amountMinor: request.amountMinor,
      currency: request.currency,
      createdAt: now,
      paymentToken: request.paymentToken,
    };
    if (as === 'authorize') {
      const lifetimeMs = request.paymentToken === TEST_TOKENS.authorizationExpires ? 0 : this.config.authorizationTtlSeconds * 1000;
      doc.expiresAt = new Date(now.getTime() + lifetimeMs);
    } else if (doc.status === 'succeeded') {
      doc.capturedMinor = request.amountMinor;
    }
    // First writer wins per key: a repeated call returns the first charge, a canceled key stays canceled.
    return this.insertOrGet(doc);
  }

  /**
   * A capture, void or refund under `key`, atomically with the change it
   * makes to the charge: the same key answers what it answered the first
   * time (success, refusal, or canceled by reconciliation).
   */
  private async operate(
    key: string,
    kind: OperationKind,
    chargeKey: string,
    act: (charge: ChargeDoc, session: ClientSession) => Promise<{ refusal: RefusalReason } | { amountMinor: number }>,
  ): Promise<OperationResult> {
    await sleep(this.config.simulatorLatencyMs);
    const result = await this.atomically(async (session) => {
      const existing = await this.operations.findOne({ _id: key }, { session });
      if (existing) return operationResult(existing);
      const charge = await this.charges.findOne({ _id: chargeKey }, { session });
      const done = charge ? await act(charge, session) : { refusal: 'no_such_payment' as const };
      const operation: OperationDoc = {
        _id: key,
        kind,
        status: 'refusal' in done ? 'refused' : 'succeeded',
        reason: 'refusal' in done ? done.refusal : null,
        id: `${OPERATION_ID_PREFIX[kind]}_${randomId()}`,
        chargeKey,
        amountMinor: 'refusal' in done ? 0 : done.amountMinor,
        currency: charge?.currency ?? 'XXX',
        createdAt: new Date(),
      };
      await this.operations.insertOne(operation, { session });
      return operationResult(operation);
    });
    this.metrics.paymentOperations.inc({ kind, outcome: result.outcome });
    return result;
  }

  /** One transaction of the simulator's database; any store failure is the provider being unavailable. */
  private async atomically<T>(work: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    try {
      return await session.withTransaction(() => work(session), {
        readConcern: { level: 'snapshot' },
        writeConcern: MAJORITY,
        timeoutMS: TRANSACTION_TIMEOUT_MS,
      });
    } catch (error) {
      if (error instanceof PaymentProviderUnavailableError) throw error;
      throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    } finally {
      await session.endSession();
    }
  }

  private async insertOrGet(doc: ChargeDoc): Promise<ChargeDoc> {
    try {
      await this.charges.insertOne(doc, { writeConcern: MAJORITY });
      return doc;
    } catch (error) {
      if (!isDuplicateKey(error)) throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    }
    return this.readExisting(doc._id);
  }

  /**
   * The document another call won with. Majority read concern: a local read
   * could return a charge (or a cancel) that a failover then rolls back, and
   * the caller would adopt what the provider no longer holds. Absent means
   * the winner's write is not majority-committed yet (or was rolled back):
   * read again for a short while, then report the provider unavailable so
   * the client retries with the same key.
   */
  private async readExisting(chargeKey: string): Promise<ChargeDoc> {
    for (let attempt = 0; attempt < EXISTING_READ_ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep(EXISTING_READ_BACKOFF_MS * 2 ** (attempt - 1));
      const existing = await this.charges.findOne({ _id: chargeKey }, { readConcern: { level: 'majority' } });
      if (existing) return existing;
    }
    throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
  }
}

const MAJORITY = { w: 'majority', j: true } as const;
const ASYNCHRONOUS = new Set<string>([TEST_TOKENS.asynchronous, TEST_TOKENS.asynchronousDeclines, TEST_TOKENS.bankTransfer]);
/** Asynchronous methods the provider cannot cancel while they are processing. */
const UNCANCELABLE_WHILE_PROCESSING = new Set<string>([TEST_TOKENS.bankTransfer]);
/** A simulator transaction past this is the provider not answering (a 503 to the caller, retried by key). */
const TRANSACTION_TIMEOUT_MS = 10_000;
const OPERATION_ID_PREFIX: Record<OperationKind, string> = { capture: 'cp', void: 'vd', refund: 're' };

/** Why an authorization cannot be captured or voided now; null when it can. */
function authorizationRefusal(charge: ChargeDoc): RefusalReason | null {
  if (charge.status === 'captured') return 'already_captured';
  if (charge.status === 'voided') return 'authorization_voided';
  if (charge.status !== 'authorized' || !charge.expiresAt) return 'no_such_payment';
  return charge.expiresAt.getTime() <= Date.now() ? 'authorization_expired' : null;
}

function operationResult(doc: OperationDoc): OperationResult {
  if (doc.status === 'canceled') return { outcome: 'canceled' };
  if (doc.status === 'refused') return { outcome: 'refused', reason: doc.reason ?? 'no_such_payment' };
  return {
    outcome: 'succeeded',
    operation: {
      id: doc.id,
      key: doc._id,
      kind: doc.kind!,
      chargeKey: doc.chargeKey!,
      amountMinor: doc.amountMinor,
      currency: doc.currency,
      createdAt: doc.createdAt,
    },
  };
}

function toAuthorization(doc: ChargeDoc): Authorization {
  return { ...toCharge(doc), expiresAt: doc.expiresAt ?? doc.createdAt };
}

const randomId = () => randomUUID().replace(/-/g, '');

function factsOf(doc: ChargeDoc): ChargeFacts {
  return { chargeKey: doc._id, chargeId: doc.id, amountMinor: doc.amountMinor, currency: doc.currency };
}

function toCharge(doc: ChargeDoc): Charge {
  return { id: doc.id, chargeKey: doc._id, amountMinor: doc.amountMinor, currency: doc.currency, createdAt: doc.createdAt };
}

const sleep = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());
