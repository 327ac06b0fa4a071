import { Inject, Injectable } from '@nestjs/common';
import { randomInt } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { SUBJECT_LOCK_MODEL, type SubjectLock, modelToken } from './schemas.js';

/**
 * Documents per subject. A claim writes one of them, an erasure all of them:
 * every claim still conflicts with every erasure of its subject, while two
 * claims of one busy subject (a tenant that sends one customer id for
 * everything) meet on the same document only one time in STRIPES.
 */
export const SUBJECT_LOCK_STRIPES = 16;

/**
 * The meeting point of a claim and an erasure of one data subject. Under
 * snapshot isolation an erasure does not see a claim that commits after its
 * snapshot, and the two write different documents, so nothing stops it from
 * answering 200 while the new order keeps the customer id. Both writing one
 * document makes them conflict: the later one retries (WriteConflict is
 * transient) and then sees the other - the erasure finds the order, or the
 * claim runs after the erasure (a new request, which may name its customer).
 * Ids are the subject digest the erasure record keeps anyway, plus a stripe.
 */
@Injectable()
export class SubjectLockRepository {
  /** The driver's collection for the claim's write, on every create's path (as IdempotencyRecordRepository). */
  private readonly native: Collection<SubjectLock>;

  constructor(@Inject(modelToken(SUBJECT_LOCK_MODEL)) private readonly locks: Model<SubjectLock>) {
    this.native = locks.collection as unknown as Collection<SubjectLock>;
  }

  /** A claim's write: one stripe, kept at least `keepUntil`. Returns the subject's last erasure, if any. */
  async touchForClaim(session: ClientSession, subject: string, now: Date, keepUntil: Date): Promise<Date | null> {
    const stripe = await this.native.findOneAndUpdate(
      { _id: stripeId(subject, randomInt(SUBJECT_LOCK_STRIPES)) },
      { $set: { updatedAt: now, expiresAt: keepUntil }, $setOnInsert: { erasedAt: null } },
      { session, upsert: true, returnDocument: 'after' },
    );
    return stripe?.erasedAt ?? null;
  }

  /**
   * An erasure's write: every stripe of the subject, in one round trip. Only
   * the first form (the keyed digest, what claims write now) is created; the
   * others (the previous release's unkeyed digest, meant for matching) are
   * updated only where a claim of that release already wrote them - creating
   * them wrote a dictionary-recoverable digest of the erased customer next to
   * the erasure's time (security review 3, SEC4-01).
   */
  async touchForErasure(session: ClientSession, subjects: string[], now: Date, keepUntil: Date): Promise<void> {
    const update = { $set: { updatedAt: now, erasedAt: now, expiresAt: keepUntil } };
    const stripes = subjects.flatMap((subject, form) =>
      Array.from({ length: SUBJECT_LOCK_STRIPES }, (_, stripe) => ({
        updateOne: { filter: { _id: stripeId(subject, stripe) }, update, upsert: form === 0 },
      })),
    );
    await this.locks.bulkWrite(stripes, { session, ordered: true });
  }
}

function stripeId(subject: string, stripe: number): string {
  return `${subject}:${stripe}`;
}
