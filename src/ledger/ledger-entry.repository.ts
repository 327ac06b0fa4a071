import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { LedgerEntry } from './ledger-entry.js';
import { LEDGER_ENTRY_MODEL } from './schemas/ledger-entry.schema.js';

/** Append-only: there is no update or delete here on purpose. */
@Injectable()
export class LedgerEntryRepository {
  /** The driver's collection for the journal's one write (see appendMissing). */
  private readonly native: Collection<LedgerEntry>;

  constructor(@InjectModel(LEDGER_ENTRY_MODEL) private readonly entries: Model<LedgerEntry>) {
    this.native = entries.collection as unknown as Collection<LedgerEntry>;
  }

  /**
   * Writes each line unless a line already has its id: one `update` command
   * of upserts ($setOnInsert), where a read of the ids and an insert were two
   * (issue 47: one store command fewer per create). Returns the ids that
   * were already there - nothing was written for them; the caller compares
   * them and, if they are not this journal, throws so that the transaction
   * rolls back the lines written here. Through the driver, like the record
   * writes of the idempotency layer: the lines are built and typed by the
   * caller (journalEntries), and Mongoose's casting costs per write.
   */
  async appendMissing(session: ClientSession, entries: LedgerEntry[]): Promise<string[]> {
    try {
      const result = await this.native.bulkWrite(
        entries.map((entry) => ({ updateOne: { filter: { _id: entry._id }, update: { $setOnInsert: entry }, upsert: true } })),
        { session, ordered: true },
      );
      return entries.filter((_, index) => result.upsertedIds[index] === undefined).map((entry) => entry._id);
    } catch (error) {
      if (isDuplicateKey(error)) throw new DuplicateClaimError('journal');
      throw error;
    }
  }

  findByIds(session: ClientSession, ids: string[]): Promise<LedgerEntry[]> {
    return this.entries
      .find({ _id: { $in: ids } })
      .session(session)
      .sort({ _id: 1 })
      .lean<LedgerEntry[]>()
      .exec();
  }

  /** Lines on one account posted in [from, to), every tenant (settlement reconciliation). */
  findOnAccount(account: string, from: Date, to: Date): Promise<LedgerEntry[]> {
    return this.entries
      .find({ account, postedAt: { $gte: from, $lt: to } })
      .sort({ postedAt: 1, _id: 1 })
      .lean<LedgerEntry[]>()
      .exec();
  }

  /** Lines on one account for these orders, whenever posted. */
  findOnAccountForOrders(account: string, orderIds: string[]): Promise<LedgerEntry[]> {
    return this.entries
      .find({ account, orderId: { $in: orderIds } })
      .lean<LedgerEntry[]>()
      .exec();
  }

  findForOrder(tenant: string, orderId: string): Promise<LedgerEntry[]> {
    return this.entries.find({ tenant, orderId }).sort({ journalId: 1, line: 1 }).lean<LedgerEntry[]>().exec();
  }
}
