import { Inject, Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { WEBHOOK_SUBJECT_MODEL, type WebhookSubject } from './schemas/webhook-subject.schema.js';

/** How long the dispatcher's inbox records live (its IdempotentMessages): a redelivery within it is dropped by them. */
export const INBOX_RETENTION_SECONDS = 30 * 24 * 3600;

/**
 * webhook_subjects: per customer that webhook payloads name (its keyed
 * digest), when it was last erased. The stream keeps each event as it was
 * published, customer id included, so the dispatcher asks here before it
 * records a delivery: an event that happened before the customer's erasure
 * goes out with a pseudonym. Both sides write the subject's document in
 * their transaction, so a dispatcher batch and an erasure of one customer
 * conflict (the later retries and sees the other) instead of both committing
 * past each other under snapshot isolation, as the idempotency package's
 * subject locks do for claims. Documents live a retention horizon past
 * their last write (each write sets it from its own time, so it only moves
 * on); events older than that horizon are not delivered at all
 * (WebhookDispatcher), so an expired erasure can never be missed.
 */
@Injectable()
export class WebhookSubjectRepository {
  /**
   * The longer of the inbox's and the deliveries' retention: within it, an event read again finds its inbox
   * record or its delivery, and a subject's erasure is still here.
   */
  readonly horizonMs: number;

  constructor(
    @InjectModel(WEBHOOK_SUBJECT_MODEL) private readonly subjects: Model<WebhookSubject>,
    @Inject(outgoingWebhooksConfig.KEY) config: OutgoingWebhooksConfig,
  ) {
    this.horizonMs = Math.max(config.retentionMs, INBOX_RETENTION_SECONDS * 1000);
  }

  /** The dispatcher's write: each subject kept a horizon past `now`; returns their last erasures (2 commands). */
  async touch(session: ClientSession, subjects: string[], now: Date): Promise<Map<string, Date | null>> {
    if (subjects.length === 0) return new Map();
    const keepUntil = new Date(now.getTime() + this.horizonMs);
    await this.subjects.bulkWrite(
      subjects.map((_id) => ({
        updateOne: { filter: { _id }, update: { $set: { expiresAt: keepUntil }, $setOnInsert: { erasedAt: null } }, upsert: true },
      })),
      { session, ordered: true },
    );
    const found = await this.subjects
      .find({ _id: { $in: subjects } })
      .session(session)
      .lean<WebhookSubject[]>()
      .exec();
    return new Map(found.map((subject) => [subject._id, subject.erasedAt]));
  }

  /** The erasure's write, in its transaction. */
  async markErased(session: ClientSession, subject: string, erasedAt: Date): Promise<void> {
    const keepUntil = new Date(erasedAt.getTime() + this.horizonMs);
    await this.subjects.updateOne({ _id: subject }, { $set: { erasedAt, expiresAt: keepUntil } }, { session, upsert: true }).exec();
  }
}
