import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { assertBalanced, type JournalLine } from './journal.js';
import type { LedgerEntry } from './ledger-entry.js';
import { LedgerEntryRepository } from './ledger-entry.repository.js';

export interface JournalPosting {
  tenant: string;
  /** Deterministic per business event (e.g. `jrn_<order id>`): entry ids derive from it, so it posts once. */
  journalId: string;
  orderId: string;
  currency: string;
  lines: JournalLine[];
  postedAt: Date;
}

/** Double-entry ledger. The only way in is post(), inside the caller's transaction. */
@Injectable()
export class LedgerService {
  constructor(private readonly entries: LedgerEntryRepository) {}

  async post(posting: JournalPosting, session: ClientSession): Promise<void> {
    assertBalanced(posting.lines);
    const entries: LedgerEntry[] = posting.lines.map((line, index) => ({
      _id: `${posting.journalId}:${index + 1}`,
      tenant: posting.tenant,
      journalId: posting.journalId,
      orderId: posting.orderId,
      line: index + 1,
      account: line.account,
      direction: line.direction,
      amountMinor: line.amountMinor,
      currency: posting.currency,
      postedAt: posting.postedAt,
    }));
    await this.entries.append(session, entries);
  }

  entriesForOrder(tenant: string, orderId: string): Promise<LedgerEntry[]> {
    return this.entries.findForOrder(tenant, orderId);
  }
}
