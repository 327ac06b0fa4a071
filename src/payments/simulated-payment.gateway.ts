import { Inject, Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import { paymentsConfig, type PaymentsConfig } from '../config/config.tokens.js';
import { isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  PaymentGateway,
  PaymentProviderUnavailableError,
  type Charge,
  type ChargeRequest,
  type ChargeResult,
  type ReconcileResult,
} from './payment-gateway.port.js';

/** Reads of a charge key that already exists: about 1.5 s in all before giving up. */
const EXISTING_READ_ATTEMPTS = 5;
const EXISTING_READ_BACKOFF_MS = 100;

/** Test tokens, like a provider's test cards. */
export const TEST_TOKENS = {
  succeeds: 'tok_visa',
  declines: 'tok_decline',
  unavailable: 'tok_provider_down',
} as const;

/** One document per charge key: a charge, or the tombstone of a canceled key. */
interface ChargeDoc {
  _id: string;
  status: 'succeeded' | 'canceled';
  id: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
}

/**
 * Stands in for an external provider: its charges live in their own
 * database and are written outside our transactions (its side effect commits
 * on its own), and it deduplicates on the charge key like Stripe's
 * Idempotency-Key. Latency comes from PAYMENT_SIMULATOR_LATENCY_MS.
 */
@Injectable()
export class SimulatedPaymentGateway extends PaymentGateway {
  private readonly charges: Collection<ChargeDoc>;

  constructor(
    @InjectConnection() connection: Connection,
    @Inject(paymentsConfig.KEY) private readonly config: PaymentsConfig,
    private readonly metrics: MetricsService,
  ) {
    super();
    this.charges = connection.useDb(config.simulatorDbName, { useCache: true }).collection<ChargeDoc>('charges');
  }

  async charge(request: ChargeRequest): Promise<ChargeResult> {
    await sleep(this.config.simulatorLatencyMs);
    if (request.paymentToken === TEST_TOKENS.unavailable) {
      this.metrics.paymentCharges.inc({ result: 'unavailable' });
      throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    }
    if (request.paymentToken === TEST_TOKENS.declines) {
      this.metrics.paymentCharges.inc({ result: 'declined' });
      return { outcome: 'declined', reason: 'card_declined' };
    }
    // First writer wins per key: a repeated call returns the first charge, a canceled key stays canceled.
    const stored = await this.insertOrGet({
      _id: request.chargeKey,
      status: 'succeeded',
      id: `ch_${randomUUID().replace(/-/g, '')}`,
      amountMinor: request.amountMinor,
      currency: request.currency,
      createdAt: new Date(),
    });
    if (stored.status === 'canceled') return { outcome: 'canceled' };
    this.metrics.paymentCharges.inc({ result: 'succeeded' });
    return { outcome: 'succeeded', charge: toCharge(stored) };
  }

  async chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    const stored = await this.insertOrGet({
      _id: chargeKey,
      status: 'canceled',
      id: `cx_${randomUUID().replace(/-/g, '')}`,
      amountMinor: 0,
      currency: 'XXX',
      createdAt: new Date(),
    });
    return stored.status === 'succeeded' ? { outcome: 'charged', charge: toCharge(stored) } : { outcome: 'canceled' };
  }

  private async insertOrGet(doc: ChargeDoc): Promise<ChargeDoc> {
    try {
      await this.charges.insertOne(doc, { writeConcern: { w: 'majority', j: true } });
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

function toCharge(doc: ChargeDoc): Charge {
  return { id: doc.id, chargeKey: doc._id, amountMinor: doc.amountMinor, currency: doc.currency, createdAt: doc.createdAt };
}

const sleep = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());
