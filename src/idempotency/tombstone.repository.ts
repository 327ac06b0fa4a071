import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { IDEMPOTENCY_TOMBSTONE_MODEL } from './schemas/idempotency-tombstone.schema.js';
import type { Tombstone } from './tombstone.js';

/** idempotency_tombstones: what outlives a stored response (tombstone.ts). */
@Injectable()
export class TombstoneRepository {
  constructor(@InjectModel(IDEMPOTENCY_TOMBSTONE_MODEL) private readonly tombstones: Model<Tombstone>) {}

  /**
   * In the transaction that finishes the record. An upsert: the same key and
   * body may finish again after an earlier incarnation expired, and the
   * newest answer is the one to point at.
   */
  async write(session: ClientSession, tombstone: Tombstone): Promise<void> {
    await this.tombstones.replaceOne({ _id: tombstone._id }, tombstone, { session, upsert: true });
  }

  findById(id: string): Promise<Tombstone | null> {
    return this.tombstones.findById(id).lean<Tombstone>().exec();
  }

  async deleteForSubject(session: ClientSession, subject: string): Promise<number> {
    const result = await this.tombstones.deleteMany({ subject }, { session });
    return result.deletedCount;
  }
}
