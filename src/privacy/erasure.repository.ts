import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import type { Erasure } from './erasure.js';
import { ERASURE_MODEL } from './schemas/erasure.schema.js';

/** What the cache sweep needs of an erasure. */
export type DueInvalidation = Pick<Erasure, '_id' | 'idempotencyRecordIds' | 'cacheGuardUntil'>;

@Injectable()
export class ErasureRepository {
  constructor(@InjectModel(ERASURE_MODEL) private readonly erasures: Model<Erasure>) {}

  async record(session: ClientSession, erasure: Erasure): Promise<void> {
    await this.erasures.insertMany([erasure], { session });
  }

  /** Erasures whose Redis invalidation is still due, oldest first (written before `before`: not one still in its request). */
  findCacheDue(before: Date, limit: number): Promise<DueInvalidation[]> {
    return this.erasures
      .find({ cacheInvalidatedAt: null, erasedAt: { $lte: before } }, { idempotencyRecordIds: 1, cacheGuardUntil: 1 })
      .sort({ erasedAt: 1 })
      .limit(limit)
      .lean<DueInvalidation[]>()
      .exec();
  }

  async markCacheInvalidated(erasureId: string, now: Date): Promise<void> {
    await this.erasures.updateOne({ _id: erasureId, cacheInvalidatedAt: null }, { $set: { cacheInvalidatedAt: now } });
  }
}
