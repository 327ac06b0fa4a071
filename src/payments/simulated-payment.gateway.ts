import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import { paymentsConfig, type PaymentsConfig } from '../config/config.tokens.js';
import { isDuplicateKey } from '../database/mongo-errors.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  PaymentGateway,
  PaymentProviderUnavailableError,
  type Charge,
  type ChargeRequest,
  type ChargeResult,
} from './payment-gateway.port.js';

/** Test tokens, like a provider's test cards. */
export const TEST_TOKENS = {
  succeeds: 'tok_visa',
  declines: 'tok_decline',
  unavailable: 'tok_provider_down',
} as const;

interface ChargeDoc extends Omit<Charge, 'chargeKey'> {
  _id: string;
}

/**
 * Stands in for an external provider: its charges live in their own
 * database and are written outside our transactions (its side effect commits
 * on its own), and it deduplicates on the charge key like Stripe's
 * Idempotency-Key.
 */
@Injectable()
export class SimulatedPaymentGateway extends PaymentGateway implements OnModuleInit {
  private readonly charges: Collection<ChargeDoc>;

  constructor(
    @InjectConnection() connection: Connection,
    @Inject(paymentsConfig.KEY) private readonly config: PaymentsConfig,
    private readonly metrics: MetricsService,
  ) {
    super();
    this.charges = connection.useDb(config.simulatorDbName, { useCache: true }).collection<ChargeDoc>('charges');
  }

  async onModuleInit(): Promise<void> {
    await this.charges.createIndex({ createdAt: 1 });
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
    const doc: ChargeDoc = {
      _id: request.chargeKey,
      id: `ch_${randomUUID().replace(/-/g, '')}`,
      amountMinor: request.amountMinor,
      currency: request.currency,
      createdAt: new Date(),
    };
    try {
      await this.charges.insertOne(doc, { writeConcern: { w: 'majority', j: true } });
    } catch (error) {
      if (!isDuplicateKey(error)) throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    }
    // Deduplicated: a second call with the same key returns the first charge.
    const charge = await this.findCharge(request.chargeKey);
    if (!charge) throw new PaymentProviderUnavailableError(this.config.retryAfterSeconds);
    this.metrics.paymentCharges.inc({ result: 'succeeded' });
    return { outcome: 'succeeded', charge };
  }

  async findCharge(chargeKey: string): Promise<Charge | null> {
    const doc = await this.charges.findOne({ _id: chargeKey });
    if (!doc) return null;
    return { id: doc.id, chargeKey: doc._id, amountMinor: doc.amountMinor, currency: doc.currency, createdAt: doc.createdAt };
  }
}

const sleep = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());
