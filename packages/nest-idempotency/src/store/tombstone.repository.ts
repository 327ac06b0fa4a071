import { Inject, Injectable } from '@nestjs/common';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { IDEMPOTENCY_TOMBSTONE_MODEL, modelToken } from './schemas.js';
import type { Tombstone } from '../protocol/record.js';

/**
 * idempotency_tombstones: what outlives a stored response (tombstone.ts).
 * The write and the look-up are on every create's path: the driver's
 * collection, as for the records (IdempotencyRecordRepository).
 */
@Injectable()
export class TombstoneRepository {
  private readonly native: Collection<Tombstone>;

  constructor(@Inject(modelToken(IDEMPOTENCY_TOMBSTONE_MODEL)) tombstones: Model<Tombstone>) {
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

  /** The tombstones among these ids (the forms one request's tombstone may have), in one read by _id. */
  findByIds(ids: string[]): Promise<Tombstone[]> {
    return this.native.find({ _id: { $in: ids } }).toArray();
  }

  /** The tombstones of a data subject (any of its digest forms), for its erasure. */
  findForSubject(session: ClientSession, subjects: string[]): Promise<Tombstone[]> {
    return this.native.find({ subject: { $in: subjects } }, { session }).toArray();
  }

  /** Erasure: each tombstone replaced by its keyed form (a new _id), in one round trip. */
  async replaceAll(session: ClientSession, replacements: { old: Tombstone; erased: Tombstone }[]): Promise<void> {
    if (replacements.length === 0) return;
    await this.native.bulkWrite(
      replacements.flatMap(({ old, erased }) => [
        { replaceOne: { filter: { _id: erased._id }, replacement: erased, upsert: true } },
        { deleteOne: { filter: { _id: old._id } } },
      ]),
      { session, ordered: true },
    );
  }
}
