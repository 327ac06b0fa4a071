import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { DuplicateClaimError, isDuplicateKey } from '@idempotent-orders/nest-idempotency';
import type { LedgerEntry } from './ledger-entry.js';
import { LEDGER_ENTRY_MODEL } from './schemas/ledger-entry.schema.js';

/** Append-only: there is no update or delete here on purpose. */
@Injectable()
export class LedgerEntryRepository {
  constructor(@InjectModel(LEDGER_ENTRY_MODEL) private readonly entries: Model<LedgerEntry>) {}

  async append(session: ClientSession, entries: LedgerEntry[]): Promise<void> {
    try {
      await this.entries.insertMany(entries, { session, ordered: true });
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
