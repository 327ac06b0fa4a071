import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { SUBJECT_LOCK_MODEL, type SubjectLock } from './schemas/subject-lock.schema.js';

/**
 * The meeting point of a claim and an erasure of one data subject. Under
 * snapshot isolation an erasure does not see a claim that commits after its
 * snapshot, and the two write different documents, so nothing stops it from
 * answering 200 while the new order keeps the customer id. Both writing this
 * one document makes them conflict: the later one retries (WriteConflict is
 * transient) and then sees the other - the erasure finds the order, or the
 * claim runs after the erasure (a new request, which may name its customer).
 * The id is the subject digest the erasure record keeps anyway.
 */
@Injectable()
export class SubjectLockRepository {
  constructor(@InjectModel(SUBJECT_LOCK_MODEL) private readonly locks: Model<SubjectLock>) {}

  async touch(session: ClientSession, subject: string, now: Date): Promise<void> {
    await this.locks.updateOne({ _id: subject }, { $set: { updatedAt: now } }, { session, upsert: true });
  }
}
