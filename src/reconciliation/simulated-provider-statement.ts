import { Inject, Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Collection, Filter } from 'mongodb';
import type { Connection } from 'mongoose';
import { paymentsConfig, type PaymentsConfig } from '../config/config.tokens.js';
import { ProviderStatement } from './provider-statement.js';
import type { ProviderSettlement } from './settlement-compare.js';

/** The fields of the simulator's charge documents a statement reads (payments/simulated-payment.gateway.ts). */
interface StatementChargeDoc {
  _id: string;
  status: string;
  id: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
  /** When an asynchronous charge settled; absent for one that succeeded at once. */
  settledAt?: Date;
  /** Refunded so far, if the provider refunded any of it. */
  refundedMinor?: number;
}

/**
 * The simulated provider's statement, read from its own database as a
 * provider's reporting API would list it: a succeeded charge counts at
 * `settledAt` (asynchronous) or `createdAt`, net of `refundedMinor`.
 */
@Injectable()
export class SimulatedProviderStatement extends ProviderStatement {
  private readonly charges: Collection<StatementChargeDoc>;

  constructor(@InjectConnection() connection: Connection, @Inject(paymentsConfig.KEY) config: PaymentsConfig) {
    super();
    this.charges = connection.useDb(config.simulatorDbName, { useCache: true }).collection<StatementChargeDoc>('charges');
  }

  async settledBetween(from: Date, to: Date): Promise<ProviderSettlement[]> {
    const range = { $gte: from, $lt: to };
    const filter: Filter<StatementChargeDoc> = {
      status: 'succeeded',
      $or: [{ settledAt: range }, { settledAt: { $exists: false }, createdAt: range }],
    };
    return (await this.charges.find(filter).toArray()).map(toSettlement);
  }

  async settledForKeys(chargeKeys: string[]): Promise<ProviderSettlement[]> {
    if (chargeKeys.length === 0) return [];
    return (await this.charges.find({ _id: { $in: chargeKeys }, status: 'succeeded' }).toArray()).map(toSettlement);
  }
}

function toSettlement(doc: StatementChargeDoc): ProviderSettlement {
  return {
    chargeKey: doc._id,
    chargeId: doc.id,
    netMinor: doc.amountMinor - (doc.refundedMinor ?? 0),
    currency: doc.currency,
    at: doc.settledAt ?? doc.createdAt,
  };
}
