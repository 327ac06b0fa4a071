import { Inject, Injectable } from '@nestjs/common';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { isDuplicateKey } from './mongo-errors.js';
import { DUPLICATE_GUARD_MODEL, type DuplicateGuardEntry, modelToken } from './schemas.js';

/**
 * idempotency_duplicate_guard: one document per (tenant, operation, body),
 * written in the claim transaction. Every operation is by `_id` (the
 * primary index); the TTL index on `until` only collects garbage. On every
 * guarded create's path: the driver's collection, as for the records.
 */
@Injectable()
export class DuplicateGuardRepository {
  private readonly native: Collection<DuplicateGuardEntry>;

  constructor(@Inject(modelToken(DUPLICATE_GUARD_MODEL)) entries: Model<DuplicateGuardEntry>) {
    this.native = entries.collection as unknown as Collection<DuplicateGuardEntry>;
  }

  /**
   * The compare-and-set of a guarded claim, one indexed write: the body is
   * taken for `entry.recordId` when no entry holds it, the entry's window
   * ended at `now`, or it is this record's already. True when this record
   * holds the body now; false when another record holds it with its window
   * open (the upsert's insert met the `_id`: a duplicate key, which aborts
   * the transaction - the caller only reads and throws after it). Two
   * claims of one body write the same `_id`: the later transaction gets a
   * write conflict, retries, and then meets the first.
   */
  async claim(session: ClientSession, entry: DuplicateGuardEntry, now: Date): Promise<boolean> {
    const { _id, ...fields } = entry;
    try {
      await this.native.updateOne(
        { _id, $or: [{ until: { $lte: now } }, { recordId: entry.recordId }] },
        { $set: fields },
        { session, upsert: true },
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /**
   * Outside any transaction: drops the entry of a holder whose request had
   * no effect (abandoned, refused, gone), only if it is still that holder's
   * (the same record and window); the next claim of the body then takes it.
   */
  async release(holder: DuplicateGuardEntry): Promise<void> {
    await this.native.deleteOne({ _id: holder._id, recordId: holder.recordId, until: holder.until });
  }

  /**
   * With a withdrawn claim, in its transaction: the entry this record held
   * goes too. Left behind, it would point a later request with that body at
   * whatever the key is used for next (another body's resource).
   */
  async releaseRecord(session: ClientSession, recordId: string): Promise<void> {
    await this.native.deleteMany({ recordId }, { session });
  }

  /** `Idempotency-Intent: new`: this record becomes the body's holder, whoever held it. */
  async replace(session: ClientSession, entry: DuplicateGuardEntry): Promise<void> {
    await this.native.replaceOne({ _id: entry._id }, entry, { session, upsert: true });
  }

  findById(id: string): Promise<DuplicateGuardEntry | null> {
    return this.native.findOne({ _id: id });
  }
}
