import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { Payment } from './payment.js';
import { PAYMENT_MODEL } from './schemas/payment.schema.js';

@Injectable()
export class PaymentRepository {
  constructor(@InjectModel(PAYMENT_MODEL) private readonly payments: Model<Payment>) {}

  async insert(session: ClientSession, payment: Payment): Promise<void> {
    try {
      await this.payments.insertMany([payment], { session });
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
