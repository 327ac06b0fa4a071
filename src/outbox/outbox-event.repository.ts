import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { AnyBulkWriteOperation, ClientSession, Model } from 'mongoose';
import type { OutboxEvent } from './outbox-event.js';
import { OUTBOX_EVENT_MODEL } from './schemas/outbox-event.schema.js';
import { OUTBOX_SEQUENCE_MODEL, type OutboxSequence } from './schemas/outbox-sequence.schema.js';

/** How one claimed event's publish ended, for the bulk mark. */
export type PublishOutcome =
  { event: OutboxEvent; published: true } | { event: OutboxEvent; published: false; retryAt: Date; error: string };

/** What a claim found: how many due candidates its window held, and the events it claimed. */
export interface ClaimedBatch {
  found: number;
  events: OutboxEvent[];
}

type Candidate = Pick<OutboxEvent, '_id' | 'aggregateId' | 'sequence' | 'availableAt'>;

/** A due event that is not its aggregate's oldest pending one, and that oldest one. */
interface BlockedEvent {
  event: Candidate;
  head: Candidate;
}

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
   * (four or five when a candidate is not its aggregate's first event), and
   * only the oldest pending event of each aggregate: an aggregate's later
   * event waits while an earlier one is pending (in backoff, or in another
   * relay's hands), so one aggregate's events reach the broker in commit
   * order. Claiming moves availableAt to `heldUntil` (a relay that dies gives
   * the batch back then) and stamps `claim`, the token the marks
   * compare-and-set on. `events` are the claimed events as they are now: a
   * change committed before the claim (an erasure) is never published in its
   * earlier form. `found` is how many due candidates the window held: a full
   * window means more may be due, however few were claimed.
   */
  async claimBatch(now: Date, heldUntil: Date, limit: number, claim: string): Promise<ClaimedBatch> {
    const due = await this.events
      .find({ status: 'pending', availableAt: { $lte: now } }, { _id: 1, aggregateId: 1, sequence: 1, availableAt: 1 })
      .sort({ availableAt: 1 })
      .limit(limit)
      .lean<Candidate[]>()
      .exec();
    if (due.length === 0) return { found: 0, events: [] };
    const { heads, blocked } = await this.aggregateHeads(due);
    await this.moveBehindHeads(blocked, now);
    if (heads.length === 0) return { found: due.length, events: [] };
    await this.events.updateMany(
      { _id: { $in: heads }, status: 'pending', availableAt: { $lte: now } },
      { $set: { availableAt: heldUntil, claim }, $inc: { attempts: 1 } },
    );
    const events = await this.events
      .find({ _id: { $in: heads }, claim, status: 'pending' })
      .lean<OutboxEvent[]>()
      .exec();
    return { found: due.length, events };
  }

  /**
   * Splits the candidates into their aggregate's oldest pending event (the
   * heads) and the later events whose head is not among them (in backoff,
   * held by another relay, or due but outside this window). An event
   * numbered 1 always is a head; an event without a sequence (an earlier
   * release's) has no order to keep.
   */
  private async aggregateHeads(due: Candidate[]): Promise<{ heads: string[]; blocked: BlockedEvent[] }> {
    const ordered = due.filter((event) => event.aggregateId !== undefined && event.sequence !== undefined && event.sequence > 1);
    if (ordered.length === 0) return { heads: due.map((event) => event._id), blocked: [] };
    const pending = await this.events
      .find(
        { aggregateId: { $in: ordered.map((event) => event.aggregateId!) }, status: 'pending', sequence: { $exists: true } },
        { aggregateId: 1, sequence: 1, availableAt: 1 },
      )
      .lean<Candidate[]>()
      .exec();
    const first = new Map<string, Candidate>();
    for (const event of pending) {
      const known = first.get(event.aggregateId!);
      if (!known || event.sequence! < known.sequence!) first.set(event.aggregateId!, event);
    }
    const isHead = (event: Candidate) => !ordered.includes(event) || first.get(event.aggregateId!)?.sequence === event.sequence;
    const heads = due.filter(isHead);
    const inWindow = new Set(heads.map((event) => event._id));
    const blocked = due
      .filter((event) => !isHead(event))
      .map((event) => ({ event, head: first.get(event.aggregateId!)! }))
      // A head claimed in this same pass is published (or backed off, its siblings with it) by the mark.
      .filter(({ head }) => head !== undefined && !inWindow.has(head._id));
    return { heads: heads.map((event) => event._id), blocked };
  }

  /**
   * A later event whose head is not claimable now would take its place in
   * every window sorted by availableAt (its commit time is earlier than the
   * head's retry time): a window full of them claims nothing, ever, and every
   * aggregate's events stall. Each is moved just behind its head (one bulk
   * write), so the next window reaches past it; the head still goes first.
   * Only events still due move: one another relay holds is left alone.
   */
  private async moveBehindHeads(blocked: BlockedEvent[], now: Date): Promise<void> {
    if (blocked.length === 0) return;
    await this.events.bulkWrite(
      blocked.map(({ event, head }) => ({
        updateOne: {
          filter: { _id: event._id, status: 'pending' as const, availableAt: { $lte: now } },
          update: { $set: { availableAt: new Date(Math.max(event.availableAt.getTime(), head.availableAt.getTime() + 1)) } },
        },
      })),
      { ordered: false },
    );
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
