import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { contentDiff } from '../common/content-diff.js';
import { DuplicateClaimError } from '@idempotent-orders/nest-idempotency';
import type { Charge } from './payment-gateway.port.js';
import { chargeKeyFor, type Payment } from './payment.js';
import { PaymentRepository } from './payment.repository.js';

/** What identifies a payment and what it says; createdAt only says when it was written. */
const PAYMENT_CONTENT = ['_id', 'tenant', 'orderId', 'chargeKey', 'providerChargeId', 'amountMinor', 'currency', 'status'] as const;

export interface RecordedCharge {
  payment: Payment;
  /** True when the payment already existed, exactly as it would have been written. */
  adopted: boolean;
}

/** Our side of payments: records a provider charge, inside the caller's transaction. */
@Injectable()
export class PaymentsService {
  constructor(private readonly payments: PaymentRepository) {}

  /**
   * Writes the payment of a charge - or adopts the one already there when it
   * is exactly this one (a half-applied earlier attempt, whatever the cause),
   * so the order moves on instead of hitting the unique backstop forever.
   * Any other payment under the charge key is a conflict for a human.
   */
  async recordCharge(session: ClientSession, tenant: string, orderId: string, charge: Charge, now: Date): Promise<RecordedCharge> {
    const payment: Payment = {
      _id: `pay_${charge.id.replace(/^ch_/, '')}`,
      tenant,
      orderId,
      chargeKey: chargeKeyFor(orderId),
      providerChargeId: charge.id,
      amountMinor: charge.amountMinor,
      currency: charge.currency,
      status: 'succeeded',
      createdAt: now,
    };
    const existing = await this.payments.findByChargeKey(session, payment.chargeKey);
    if (!existing) {
      await this.payments.insert(session, payment);
      return { payment, adopted: false };
    }
    const differs = contentDiff(existing, payment, PAYMENT_CONTENT);
    if (differs.length > 0) throw new DuplicateClaimError('payment', `payment ${existing._id} differs in ${differs.join(', ')}`);
    return { payment: existing, adopted: true };
  }
}
