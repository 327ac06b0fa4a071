import { Inject, Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Collection, Filter } from 'mongodb';
import type { Connection } from 'mongoose';
import { paymentsConfig, type PaymentsConfig } from '../config/config.tokens.js';
import { ProviderStatement, type ProviderSettlement } from '../payments/provider-statement.port.js';

/** The fields of the simulator's charge documents a statement reads (simulated-payment.gateway.ts). */
interface StatementChargeDoc {
  _id: string;
  status: string;
  id: string;
  amountMinor: number;
  currency: string;
  createdAt: Date;
  /** When an asynchronous charge settled; absent for one that succeeded at once. */
  settledAt?: Date;
  /** A captured authorization: the amount taken (at most the authorized `amountMinor`) and when. */
  capturedMinor?: number;
  capturedAt?: Date;
  /** Refunded so far, if the provider refunded any of it. */
  refundedMinor?: number;
}

/**
 * The simulated provider's statement, read from its own database as a
 * provider's reporting API would list it, net of `refundedMinor`: a
 * succeeded charge counts its amount at `settledAt` (asynchronous) or
 * `createdAt`; a captured authorization counts `capturedMinor` at
 * `capturedAt` (`createdAt` on documents of releases before it was kept).
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
      $or: [
        { status: 'succeeded', settledAt: range },
        { status: 'succeeded', settledAt: { $exists: false }, createdAt: range },
        { status: 'captured', capturedAt: range },
        { status: 'captured', capturedAt: { $exists: false }, createdAt: range },
      ],
    };
    return (await this.charges.find(filter).toArray()).map(toSettlement);
  }

  async settledForKeys(chargeKeys: string[]): Promise<ProviderSettlement[]> {
    if (chargeKeys.length === 0) return [];
    return (await this.charges.find({ _id: { $in: chargeKeys }, status: { $in: SETTLED } }).toArray()).map(toSettlement);
  }
}

/** The statuses under which money was taken: a charge, a captured authorization. */
const SETTLED = ['succeeded', 'captured'];

function toSettlement(doc: StatementChargeDoc): ProviderSettlement {
  const captured = doc.status === 'captured';
  // A capture takes capturedMinor, not the authorized amount (a partial capture releases the rest).
  const takenMinor = captured ? (doc.capturedMinor ?? doc.amountMinor) : doc.amountMinor;
  return {
    chargeKey: doc._id,
    chargeId: doc.id,
    netMinor: takenMinor - (doc.refundedMinor ?? 0),
    currency: doc.currency,
    at: (captured ? doc.capturedAt : doc.settledAt) ?? doc.createdAt,
  };
}
