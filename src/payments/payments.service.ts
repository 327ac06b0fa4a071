import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { contentDiff } from '../common/content-diff.js';
import { DuplicateClaimError } from '@idempotent-orders/nest-idempotency';
import type { Authorization, Charge } from './payment-gateway.port.js';
import { chargeKeyFor, paymentIdFor, type Payment, type PaymentStatus } from './payment.js';
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
  recordCharge(session: ClientSession, tenant: string, orderId: string, charge: Charge, now: Date): Promise<RecordedCharge> {
    return this.record(session, tenant, orderId, charge, 'succeeded', now);
  }

  /** Manual capture: the payment of an authorization (status `authorized`), adopted when it is already there exactly so. */
  recordAuthorization(
    session: ClientSession,
    tenant: string,
    orderId: string,
    authorization: Authorization,
    now: Date,
  ): Promise<RecordedCharge> {
    return this.record(session, tenant, orderId, authorization, 'authorized', now);
  }

  /**
   * An authorization moves on (captured, voided, expired): one conditional
   * update from `authorized`. Already there exactly so (a half-applied
   * earlier attempt) is adopted; anything else is a conflict for a human.
   */
  async settleAuthorization(
    session: ClientSession,
    orderId: string,
    to: Extract<PaymentStatus, 'captured' | 'voided' | 'expired'>,
    details: Pick<Payment, 'capturedMinor' | 'providerOperationId'> = {},
  ): Promise<'settled' | 'adopted'> {
    const chargeKey = chargeKeyFor(orderId);
    const set = { status: to, ...details };
    if (await this.payments.changeStatus(session, chargeKey, 'authorized', set)) return 'settled';
    const existing = await this.payments.findByChargeKey(session, chargeKey);
    const differs = existing ? contentDiff(existing, set as Payment, ['status', 'capturedMinor', 'providerOperationId']) : ['absent'];
    if (differs.length > 0)
      throw new DuplicateClaimError('payment', `payment under ${chargeKey} is not authorized (${differs.join(', ')})`);
    return 'adopted';
  }

  private async record(
    session: ClientSession,
    tenant: string,
    orderId: string,
    charge: Charge,
    status: Extract<PaymentStatus, 'succeeded' | 'authorized'>,
    now: Date,
  ): Promise<RecordedCharge> {
    const payment: Payment = {
      _id: paymentIdFor(charge.id),
      tenant,
      orderId,
      chargeKey: chargeKeyFor(orderId),
      providerChargeId: charge.id,
      amountMinor: charge.amountMinor,
      currency: charge.currency,
      status,
      createdAt: now,
    };
    if (await this.payments.insertUnlessCharged(session, payment)) return { payment, adopted: false };
    // Rare: a payment was already under the charge key. Read it (nothing was written) and adopt it only if it is this one.
    const existing = await this.payments.findByChargeKey(session, payment.chargeKey);
    if (!existing) throw new Error(`Payment under ${payment.chargeKey}: the upsert matched one, the read found none`);
    const differs = contentDiff(existing, payment, PAYMENT_CONTENT);
    if (differs.length > 0) throw new DuplicateClaimError('payment', `payment ${existing._id} differs in ${differs.join(', ')}`);
    return { payment: existing, adopted: true };
  }
}
