import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { contentDiff } from '../common/content-diff.js';
import { DuplicateClaimError } from '@idempotent-orders/nest-idempotency';
import { ACCOUNTS, assertBalanced, paidOrderJournal, type JournalLine } from './journal.js';
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

/** What a journal line says; postedAt only says when it was written. */
const ENTRY_CONTENT = ['_id', 'tenant', 'journalId', 'orderId', 'line', 'account', 'direction', 'amountMinor', 'currency'] as const;

export function journalEntries(posting: JournalPosting): LedgerEntry[] {
  return posting.lines.map((line, index) => ({
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
}

/** Null when the stored lines are exactly the journal (same ids, same content); else how they differ. */
export function journalDiff(stored: LedgerEntry[], expected: LedgerEntry[]): string | null {
  if (stored.length !== expected.length) return `${stored.length} of its ${expected.length} lines exist`;
  const byId = new Map(stored.map((entry) => [entry._id, entry]));
  for (const line of expected) {
    const found = byId.get(line._id);
    const differs = found ? contentDiff(found, line, ENTRY_CONTENT) : ['_id'];
    if (differs.length > 0) return `line ${line.line} differs in ${differs.join(', ')}`;
  }
  return null;
}

/** Double-entry ledger. The only way in is post(), inside the caller's transaction. */
@Injectable()
export class LedgerService {
  constructor(private readonly entries: LedgerEntryRepository) {}

  /**
   * Posts the journal - or adopts it when every line already exists exactly
   * as it would be written (a half-applied earlier attempt); 'adopted' then.
   * Some lines, or other lines, under its ids are a conflict for a human.
   */
  async post(posting: JournalPosting, session: ClientSession): Promise<'posted' | 'adopted'> {
    assertBalanced(posting.lines);
    const entries = journalEntries(posting);
    const found = await this.entries.appendMissing(session, entries);
    if (found.length === 0) return 'posted';
    // Rare: lines were already there (nothing written for them). Some of the journal is a conflict, and so is
    // other content; throwing rolls back the lines this call wrote with the rest of the transaction.
    const differs =
      found.length < entries.length
        ? `${found.length} of its ${entries.length} lines exist`
        : journalDiff(await this.entries.findByIds(session, found), entries);
    if (differs) throw new DuplicateClaimError('journal', `journal ${posting.journalId}: ${differs}`);
    return 'adopted';
  }

  /**
   * An order's sale and settlement of the amount the provider took (an
   * automatic charge, an asynchronous one, a capture): journal
   * `jrn_<order id>`, so whichever path posts it first, the others adopt it.
   */
  postSale(session: ClientSession, sale: { tenant: string; orderId: string; currency: string; amountMinor: number; postedAt: Date }) {
    const { tenant, orderId, currency, amountMinor, postedAt } = sale;
    return this.post({ tenant, journalId: `jrn_${orderId}`, orderId, currency, lines: paidOrderJournal(amountMinor), postedAt }, session);
  }

  /** The provider clearing account's lines posted in [from, to) (settlement reconciliation). */
  clearingEntries(from: Date, to: Date): Promise<LedgerEntry[]> {
    return this.entries.findOnAccount(ACCOUNTS.providerClearing, from, to);
  }

  /** The provider clearing account's lines of these orders, whenever posted. */
  clearingEntriesForOrders(orderIds: string[]): Promise<LedgerEntry[]> {
    return orderIds.length === 0 ? Promise.resolve([]) : this.entries.findOnAccountForOrders(ACCOUNTS.providerClearing, orderIds);
  }

  entriesForOrder(tenant: string, orderId: string): Promise<LedgerEntry[]> {
    return this.entries.findForOrder(tenant, orderId);
  }
}
