import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey, LeaseLostError } from '@idempotent-orders/nest-idempotency';
import type { Refund, RefundFailure } from './refund.js';
import { REFUND_MODEL } from './schemas/refund.schema.js';

/**
 * refunds. A refund leaves `pending` once, by a conditional update on that
 * state: a second writer (a worker that lost its lease) matches nothing.
 */
@Injectable()
export class RefundRepository {
  constructor(@InjectModel(REFUND_MODEL) private readonly refunds: Model<Refund>) {}

  async insertPending(session: ClientSession, refund: Refund): Promise<void> {
    try {
      await this.refunds.insertMany([refund], { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateClaimError('refund');
      throw error;
    }
  }

  findById(refundId: string, session?: ClientSession): Promise<Refund | null> {
    return this.refunds
      .findById(refundId)
      .session(session ?? null)
      .lean<Refund>()
      .exec();
  }

  findForTenant(tenant: string, orderId: string, refundId: string): Promise<Refund | null> {
    return this.refunds.findOne({ _id: refundId, tenant, orderId }).lean<Refund>().exec();
  }

  /** The order's refunds, oldest first. */
  listForOrder(tenant: string, orderId: string): Promise<Refund[]> {
    return this.refunds.find({ tenant, orderId }).sort({ createdAt: 1, _id: 1 }).lean<Refund[]>().exec();
  }

  markSucceeded(session: ClientSession, refund: Refund, providerRefundId: string, now: Date): Promise<void> {
    return this.leavePending(session, refund, 'succeeded', now, { providerRefundId });
  }

  markFailed(session: ClientSession, refund: Refund, reason: RefundFailure, now: Date): Promise<void> {
    return this.leavePending(session, refund, 'failed', now, { failureReason: reason });
  }

  /** The refund under our provider key, read in the caller's transaction (a provider event names it by the key). */
  findByProviderKey(session: ClientSession, providerKey: string): Promise<Refund | null> {
    return this.refunds.findOne({ providerKey }).session(session).lean<Refund>().exec();
  }

  /** A succeeded refund the provider failed later; false when it was not `succeeded` any more (another event got there first). */
  async markFailedAfterSuccess(session: ClientSession, refund: Refund, reason: RefundFailure, now: Date): Promise<boolean> {
    const result = await this.refunds.updateOne(
      { _id: refund._id, state: 'succeeded' },
      { $set: { state: 'failed', failureReason: reason, 'stateHistory.failed': now, updatedAt: now } },
      { session },
    );
    return result.matchedCount === 1;
  }

  private async leavePending(
    session: ClientSession,
    refund: Refund,
    to: 'succeeded' | 'failed',
    now: Date,
    fields: Partial<Refund>,
  ): Promise<void> {
    const result = await this.refunds.updateOne(
      { _id: refund._id, state: 'pending' },
      { $set: { ...fields, state: to, [`stateHistory.${to}`]: now, updatedAt: now } },
      { session },
    );
    // The record's fenced write earlier in the transaction normally fires first; this is the refund's own fence.
    if (result.matchedCount !== 1) throw new LeaseLostError(refund.idempotency.recordId);
  }
}
