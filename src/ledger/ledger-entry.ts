import type { Direction } from './journal.js';

/** One line of an append-only journal (ledger_entries). */
export interface LedgerEntry {
  _id: string;
  tenant: string;
  journalId: string;
  orderId: string;
  line: number;
  account: string;
  direction: Direction;
  amountMinor: number;
  currency: string;
  postedAt: Date;
}
