import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import type { Charge } from './payment-gateway.port.js';
import { chargeKeyFor, type Payment } from './payment.js';
import { PaymentRepository } from './payment.repository.js';

/** Our side of payments: records a provider charge, inside the caller's transaction. */
@Injectable()
export class PaymentsService {
  constructor(private readonly payments: PaymentRepository) {}

  async recordCharge(session: ClientSession, tenant: string, orderId: string, charge: Charge, now: Date): Promise<Payment> {
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
    await this.payments.insert(session, payment);
    return payment;
  }
}
