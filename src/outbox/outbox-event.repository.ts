import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { isDuplicateKey } from '../database/mongo-errors.js';
import { DuplicateClaimError } from '../idempotency/idempotency.errors.js';
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

  async pseudonymizeCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    const result = await this.events.updateMany(
      { tenant, 'payload.customerId': customerId },
      { $set: { 'payload.customerId': pseudonym } },
      { session },
    );
    return result.modifiedCount;
  }

  findDue(now: Date, limit: number): Promise<OutboxEvent[]> {
    return this.events
      .find({ status: 'pending', availableAt: { $lte: now } })
      .sort({ availableAt: 1 })
      .limit(limit)
      .lean<OutboxEvent[]>()
      .exec();
  }

  /** Compare-and-set on the attempt we published: a concurrent relay's success is not overwritten. */
  async markPublished(event: OutboxEvent, now: Date): Promise<boolean> {
    const result = await this.events.updateOne(
      { _id: event._id, status: 'pending', attempts: event.attempts },
      { $set: { status: 'published', publishedAt: now, lastError: null }, $inc: { attempts: 1 } },
    );
    return result.modifiedCount === 1;
  }

  async markFailed(event: OutboxEvent, retryAt: Date, error: string): Promise<void> {
    await this.events.updateOne(
      { _id: event._id, status: 'pending', attempts: event.attempts },
      { $set: { availableAt: retryAt, lastError: error.slice(0, 500) }, $inc: { attempts: 1 } },
    );
  }

  countPending(): Promise<number> {
    return this.events.countDocuments({ status: 'pending' }).exec();
  }
}
