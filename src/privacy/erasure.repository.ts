import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import type { Erasure } from './erasure.js';
import { ERASURE_MODEL } from './schemas/erasure.schema.js';

@Injectable()
export class ErasureRepository {
  constructor(@InjectModel(ERASURE_MODEL) private readonly erasures: Model<Erasure>) {}

  async record(session: ClientSession, erasure: Erasure): Promise<void> {
    await this.erasures.insertMany([erasure], { session });
  }

  /** Every idempotency record erased for this subject, by any erasure of it (a retry repeats the cache invalidation). */
  async idempotencyRecordIdsFor(tenant: string, subjectHash: string): Promise<string[]> {
    const erasures = await this.erasures
      .find({ tenant, subjectHash }, { idempotencyRecordIds: 1 })
      .lean<Pick<Erasure, 'idempotencyRecordIds'>[]>()
      .exec();
    return [...new Set(erasures.flatMap((erasure) => erasure.idempotencyRecordIds ?? []))];
  }
}
