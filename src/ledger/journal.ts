export type Direction = 'debit' | 'credit';

export const ACCOUNTS = {
  receivable: 'customer_receivable',
  revenue: 'revenue',
  providerClearing: 'payment_provider_clearing',
} as const;

export interface JournalLine {
  account: string;
  direction: Direction;
  amountMinor: number;
}

export class UnbalancedJournalError extends Error {
  constructor(detail: string) {
    super(`Journal rejected: ${detail}`);
    this.name = 'UnbalancedJournalError';
  }
}

/** Debits equal credits, every amount a positive safe integer, one currency. */
export function assertBalanced(lines: JournalLine[]): void {
  if (lines.length < 2) throw new UnbalancedJournalError('a journal needs at least two lines');
  let balance = 0n;
  for (const line of lines) {
    if (!Number.isSafeInteger(line.amountMinor) || line.amountMinor <= 0) {
      throw new UnbalancedJournalError(`amount ${line.amountMinor} is not a positive integer of minor units`);
    }
    balance += BigInt(line.amountMinor) * (line.direction === 'debit' ? 1n : -1n);
  }
  if (balance !== 0n) throw new UnbalancedJournalError(`debits and credits differ by ${balance}`);
}

/**
 * A paid order: the sale (receivable against revenue) and its settlement by
 * the provider (clearing against receivable). The receivable nets to zero.
 */
export function paidOrderJournal(amountMinor: number): JournalLine[] {
  return [
    { account: ACCOUNTS.receivable, direction: 'debit', amountMinor },
    { account: ACCOUNTS.revenue, direction: 'credit', amountMinor },
    { account: ACCOUNTS.providerClearing, direction: 'debit', amountMinor },
    { account: ACCOUNTS.receivable, direction: 'credit', amountMinor },
  ];
}

/**
 * A refund: the reversal of a paid order's journal for the refunded amount -
 * the sale is undone (revenue against receivable) and the money goes back
 * through the provider (receivable against clearing). One per succeeded
 * refund, so the sum of an order's reversals is its refunded amount.
 */
export function refundJournal(amountMinor: number): JournalLine[] {
  return [
    { account: ACCOUNTS.revenue, direction: 'debit', amountMinor },
    { account: ACCOUNTS.receivable, direction: 'credit', amountMinor },
    { account: ACCOUNTS.receivable, direction: 'debit', amountMinor },
    { account: ACCOUNTS.providerClearing, direction: 'credit', amountMinor },
  ];
}

/**
 * A refund the provider failed after it succeeded: the compensation of its
 * reversal (refundJournal), posted as its own journal - the money came back
 * through the provider (clearing against receivable) and the sale stands
 * again (receivable against revenue). Lines are never deleted: the order's
 * journals still sum to what happened.
 */
export function refundFailedJournal(amountMinor: number): JournalLine[] {
  return [
    { account: ACCOUNTS.providerClearing, direction: 'debit', amountMinor },
    { account: ACCOUNTS.receivable, direction: 'credit', amountMinor },
    { account: ACCOUNTS.receivable, direction: 'debit', amountMinor },
    { account: ACCOUNTS.revenue, direction: 'credit', amountMinor },
  ];
}
