import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { AnyBulkWriteOperation, ClientSession, Model } from 'mongoose';
import type { OutboxEvent } from './outbox-event.js';
import { OUTBOX_EVENT_MODEL } from './schemas/outbox-event.schema.js';
import { OUTBOX_SEQUENCE_MODEL, type OutboxSequence } from './schemas/outbox-sequence.schema.js';

/** How one claimed event's publish ended, for the bulk mark. */
export type PublishOutcome =
  { event: OutboxEvent; published: true } | { event: OutboxEvent; published: false; retryAt: Date; error: string };

export interface PendingStats {
  count: number;
  oldestCreatedAt: Date | null;
}

@Injectable()
export class OutboxEventRepository {
  constructor(
    @InjectModel(OUTBOX_EVENT_MODEL) private readonly events: Model<OutboxEvent>,
    @InjectModel(OUTBOX_SEQUENCE_MODEL) private readonly sequences: Model<OutboxSequence>,
  ) {}

  /**
   * One command for the usual case, where the event is new: an upsert that
   * only inserts. False when an event with this id is already there (its
   * content untouched), for the caller to compare.
   */
  async insertIfAbsent(session: ClientSession, event: OutboxEvent): Promise<boolean> {
    const { _id, ...fields } = event;
    const result = await this.events.updateOne({ _id }, { $setOnInsert: fields }, { upsert: true, session });
    return result.upsertedCount === 1;
  }

  findById(session: ClientSession, id: string): Promise<OutboxEvent | null> {
    return this.events.findById(id).session(session).lean<OutboxEvent>().exec();
  }

  /**
   * Inside the event's transaction: the aggregate's next sequence number. Two
   * transactions adding events to one aggregate write this one document, so
   * one of them conflicts and retries: numbers follow commit order, no gaps.
   */
  async nextSequence(session: ClientSession, aggregateId: string): Promise<number> {
    const counter = await this.sequences
      .findOneAndUpdate({ _id: aggregateId }, { $inc: { last: 1 } }, { upsert: true, returnDocument: 'after', session })
      .lean<OutboxSequence>()
      .exec();
    return counter.last;
  }

  /** Gives back the number nextSequence just took, in the same transaction: the event it was for already existed. */
  async releaseSequence(session: ClientSession, aggregateId: string): Promise<void> {
    await this.sequences.updateOne({ _id: aggregateId }, { $inc: { last: -1 } }, { session });
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
   * Claims up to `limit` due events in three round trips whatever the limit
   * (four when a candidate is not its aggregate's first event), and only the
   * oldest pending event of each aggregate: an aggregate's later event waits
   * while an earlier one is pending (in backoff, or in another relay's hands),
   * so one aggregate's events reach the broker in commit order. Claiming moves
   * availableAt to `heldUntil` (a relay that dies gives the batch back then)
   * and stamps `claim`, the token the marks compare-and-set on. Returns the
   * events as they are now: a change committed before the claim (an erasure)
   * is never published in its earlier form.
   */
  async claimBatch(now: Date, heldUntil: Date, limit: number, claim: string): Promise<OutboxEvent[]> {
    const due = await this.events
      .find({ status: 'pending', availableAt: { $lte: now } }, { _id: 1, aggregateId: 1, sequence: 1 })
      .sort({ availableAt: 1 })
      .limit(limit)
      .lean<Pick<OutboxEvent, '_id' | 'aggregateId' | 'sequence'>[]>()
      .exec();
    if (due.length === 0) return [];
    const heads = await this.aggregateHeads(due);
    if (heads.length === 0) return [];
    await this.events.updateMany(
      { _id: { $in: heads }, status: 'pending', availableAt: { $lte: now } },
      { $set: { availableAt: heldUntil, claim }, $inc: { attempts: 1 } },
    );
    return this.events
      .find({ _id: { $in: heads }, claim, status: 'pending' })
      .lean<OutboxEvent[]>()
      .exec();
  }

  /**
   * The candidates that are their aggregate's oldest pending event. An
   * event numbered 1 always is; an event without a sequence (an earlier
   * release's) has no order to keep.
   */
  private async aggregateHeads(due: Pick<OutboxEvent, '_id' | 'aggregateId' | 'sequence'>[]): Promise<string[]> {
    const ordered = due.filter((event) => event.aggregateId !== undefined && event.sequence !== undefined && event.sequence > 1);
    if (ordered.length === 0) return due.map((event) => event._id);
    const pending = await this.events
      .find(
        { aggregateId: { $in: ordered.map((event) => event.aggregateId!) }, status: 'pending', sequence: { $exists: true } },
        { aggregateId: 1, sequence: 1 },
      )
      .lean<Pick<OutboxEvent, '_id' | 'aggregateId' | 'sequence'>[]>()
      .exec();
    const first = new Map<string, number>();
    for (const event of pending) first.set(event.aggregateId!, Math.min(first.get(event.aggregateId!) ?? Infinity, event.sequence!));
    return due.filter((event) => !ordered.includes(event) || first.get(event.aggregateId!) === event.sequence).map((event) => event._id);
  }

  /**
   * One bulk write for a whole batch. Each mark compares-and-sets on the claim
   * token: a relay that took an event over after us is not overwritten. A
   * failed event's later siblings wait at least as long as it does, so they do
   * not fill the next batches while their aggregate is blocked.
   */
  async markBatch(outcomes: PublishOutcome[], claim: string, now: Date): Promise<void> {
    if (outcomes.length === 0) return;
    const operations: AnyBulkWriteOperation<OutboxEvent>[] = [];
    for (const outcome of outcomes) {
      const mine = { _id: outcome.event._id, status: 'pending' as const, claim };
      if (outcome.published) {
        operations.push({
          updateOne: { filter: mine, update: { $set: { status: 'published', publishedAt: now, lastError: null, claim: null } } },
        });
        continue;
      }
      operations.push({
        updateOne: { filter: mine, update: { $set: { availableAt: outcome.retryAt, lastError: outcome.error.slice(0, 500) } } },
      });
      if (outcome.event.aggregateId !== undefined && outcome.event.sequence !== undefined) {
        operations.push({
          updateMany: {
            filter: {
              aggregateId: outcome.event.aggregateId,
              status: 'pending',
              sequence: { $gt: outcome.event.sequence },
              availableAt: { $lt: outcome.retryAt },
            },
            update: { $set: { availableAt: outcome.retryAt } },
          },
        });
      }
    }
    await this.events.bulkWrite(operations, { ordered: false });
  }

  /** The backlog and its oldest event (outbox_backlog, outbox_oldest_pending_age_seconds); the oldest through the pending_age index. */
  async pendingStats(): Promise<PendingStats> {
    const [count, oldest] = await Promise.all([
      this.events.countDocuments({ status: 'pending' }).exec(),
      this.events.findOne({ status: 'pending' }, { createdAt: 1 }).sort({ createdAt: 1 }).lean<Pick<OutboxEvent, 'createdAt'>>().exec(),
    ]);
    return { count, oldestCreatedAt: oldest?.createdAt ?? null };
  }
}
