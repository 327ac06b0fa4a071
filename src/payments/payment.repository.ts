import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { Payment } from './payment.js';
import { PAYMENT_MODEL } from './schemas/payment.schema.js';

@Injectable()
export class PaymentRepository {
  /** The driver's collection for the create path's one write (see insertUnlessCharged). */
  private readonly native: Collection<Payment>;

  constructor(@InjectModel(PAYMENT_MODEL) private readonly payments: Model<Payment>) {
    this.native = payments.collection as unknown as Collection<Payment>;
  }

  /**
   * Writes the payment unless its charge key already has one: one upsert
   * ($setOnInsert) where a read and an insert were two commands (issue 47:
   * one store command fewer per create). True when this call wrote it; false
   * when a payment was already there, and then nothing was written (the
   * caller reads and compares it). The same _id under another charge key is
   * the unique backstop, as for an insert. Through the driver, like the
   * record writes of the idempotency layer: the document is built and typed
   * by the caller, and Mongoose's casting per write costs as much CPU as the
   * round trip (bench/README.md).
   */
  async insertUnlessCharged(session: ClientSession, payment: Payment): Promise<boolean> {
    try {
      const result = await this.native.updateOne({ chargeKey: payment.chargeKey }, { $setOnInsert: payment }, { session, upsert: true });
      return result.upsertedCount === 1;
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateClaimError('payment');
      throw error;
    }
  }

  /** One conditional update on the payment's status; false when it was not in `from` (nothing written). */
  async changeStatus(session: ClientSession, chargeKey: string, from: Payment['status'], set: Partial<Payment>): Promise<boolean> {
    const result = await this.payments.updateOne({ chargeKey, status: from }, { $set: set }, { session });
    return result.matchedCount === 1;
  }

  findByChargeKey(session: ClientSession, chargeKey: string): Promise<Payment | null> {
    return this.payments.findOne({ chargeKey }).session(session).lean<Payment>().exec();
  }
}
