import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { InboxEvent } from './inbox-event.js';
import { INBOX_EVENT_MODEL } from './schemas/inbox-event.schema.js';

/** The event id is in the inbox already: this delivery is a duplicate (committed by another, or just now). */
export class EventAlreadyReceivedError extends Error {
  constructor(readonly eventId: string) {
    super(`Event ${eventId} is already in the inbox`);
    this.name = 'EventAlreadyReceivedError';
  }
}

@Injectable()
export class InboxEventRepository {
  constructor(@InjectModel(INBOX_EVENT_MODEL) private readonly events: Model<InboxEvent>) {}

  /** The first write of the event's transaction: the unique _id is what makes the effect happen once. */
  async insert(session: ClientSession, event: InboxEvent): Promise<void> {
    try {
      await this.events.insertMany([event], { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new EventAlreadyReceivedError(event._id);
      throw error;
    }
  }

  findById(id: string, session?: ClientSession): Promise<InboxEvent | null> {
    return this.events
      .findById(id)
      .session(session ?? null)
      .lean<InboxEvent>()
      .exec();
  }

  /** The highest sequence of this charge's events that were applied; 0 when none was. */
  async lastAppliedSequence(session: ClientSession, chargeKey: string): Promise<number> {
    const latest = await this.events
      .findOne({ chargeKey, outcome: 'applied' })
      .sort({ sequence: -1 })
      .session(session)
      .lean<InboxEvent>()
      .exec();
    return latest?.sequence ?? 0;
  }
}
