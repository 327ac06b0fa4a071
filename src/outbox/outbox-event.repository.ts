import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { OutboxEvent } from './outbox-event.js';
import { OUTBOX_EVENT_MODEL } from './schemas/outbox-event.schema.js';

@Injectable()
export class OutboxEventRepository {
  constructor(@InjectModel(OUTBOX_EVENT_MODEL) private readonly events: Model<OutboxEvent>) {}

  async insert(session: ClientSession, event: OutboxEvent): Promise<void> {
    try {
      await this.events.insertMany([event], { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateClaimError('outbox event');
      throw error;
    }
  }

  findById(session: ClientSession, id: string): Promise<OutboxEvent | null> {
    return this.events.findById(id).session(session).lean<OutboxEvent>().exec();
  }

  async pseudonymizeCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    const result = await this.events.updateMany(
      { tenant, 'payload.customerId': customerId },
      { $set: { 'payload.customerId': pseudonym } },
      { session },
    );
    return result.modifiedCount;
  }

  /**
   * Claims the oldest due event for one publish: moves availableAt to
   * `heldUntil` (no other relay takes it meanwhile; if this one dies, it is
   * due again then) and counts the attempt. Returns the event as it is now -
   * what gets published, so a change committed before the claim (an erasure)
   * is never published in its earlier form.
   */
  claimNext(now: Date, heldUntil: Date): Promise<OutboxEvent | null> {
    return this.events
      .findOneAndUpdate(
        { status: 'pending', availableAt: { $lte: now } },
        { $set: { availableAt: heldUntil }, $inc: { attempts: 1 } },
        { sort: { availableAt: 1 }, returnDocument: 'after' },
      )
      .lean<OutboxEvent>()
      .exec();
  }

  /** Compare-and-set on our claim (its attempt number): a relay that took the event over after us is not overwritten. */
  async markPublished(claimed: OutboxEvent, now: Date): Promise<boolean> {
    const result = await this.events.updateOne(
      { _id: claimed._id, status: 'pending', attempts: claimed.attempts },
      { $set: { status: 'published', publishedAt: now, lastError: null } },
    );
    return result.modifiedCount === 1;
  }

  async markFailed(claimed: OutboxEvent, retryAt: Date, error: string): Promise<void> {
    await this.events.updateOne(
      { _id: claimed._id, status: 'pending', attempts: claimed.attempts },
      { $set: { availableAt: retryAt, lastError: error.slice(0, 500) } },
    );
  }

  countPending(): Promise<number> {
    return this.events.countDocuments({ status: 'pending' }).exec();
  }
}
