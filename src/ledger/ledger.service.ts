import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { contentDiff } from '../common/content-diff.js';
import { DuplicateClaimError } from '@idempotent-orders/nest-idempotency';
import { ACCOUNTS, assertBalanced, type JournalLine } from './journal.js';
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
    const existing = await this.entries.findByIds(
      session,
      entries.map((entry) => entry._id),
    );
    if (existing.length === 0) {
      await this.entries.append(session, entries);
      return 'posted';
    }
    const differs = journalDiff(existing, entries);
    if (differs) throw new DuplicateClaimError('journal', `journal ${posting.journalId}: ${differs}`);
    return 'adopted';
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
