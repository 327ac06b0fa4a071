import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { IDEMPOTENCY_TOMBSTONE_MODEL } from './schemas/idempotency-tombstone.schema.js';
import type { Tombstone } from './tombstone.js';

/**
 * idempotency_tombstones: what outlives a stored response (tombstone.ts).
 * The write and the look-up are on every create's path: the driver's
 * collection, as for the records (IdempotencyRecordRepository).
 */
@Injectable()
export class TombstoneRepository {
  private readonly native: Collection<Tombstone>;

  constructor(@InjectModel(IDEMPOTENCY_TOMBSTONE_MODEL) private readonly tombstones: Model<Tombstone>) {
    this.native = tombstones.collection as unknown as Collection<Tombstone>;
  }

  /**
   * In the transaction that finishes the record. An upsert: the same key and
   * body may finish again after an earlier incarnation expired, and the
   * newest answer is the one to point at.
   */
  async write(session: ClientSession, tombstone: Tombstone): Promise<void> {
    await this.native.replaceOne({ _id: tombstone._id }, tombstone, { session, upsert: true });
  }

  findById(id: string): Promise<Tombstone | null> {
    return this.native.findOne({ _id: id });
  }

  async deleteForSubject(session: ClientSession, subject: string): Promise<number> {
    const result = await this.tombstones.deleteMany({ subject }, { session });
    return result.deletedCount;
  }
}
