import { describe, expect, it } from '@jest/globals';
import { assertBalanced, paidOrderJournal, UnbalancedJournalError } from './journal.js';

describe('journal', () => {
  it('posts a paid order as sale + settlement that nets to zero', () => {
    const lines = paidOrderJournal(2500);
    expect(() => assertBalanced(lines)).not.toThrow();
    const net = (account: string) =>
      lines.filter((l) => l.account === account).reduce((sum, l) => sum + (l.direction === 'debit' ? l.amountMinor : -l.amountMinor), 0);
    expect(net('customer_receivable')).toBe(0);
    expect(net('revenue')).toBe(-2500);
    expect(net('payment_provider_clearing')).toBe(2500);
  });

  it('refuses unbalanced, fractional, zero or single-line journals', () => {
    expect(() =>
      assertBalanced([
        { account: 'a', direction: 'debit', amountMinor: 100 },
        { account: 'b', direction: 'credit', amountMinor: 99 },
      ]),
    ).toThrow(UnbalancedJournalError);
    expect(() =>
      assertBalanced([
        { account: 'a', direction: 'debit', amountMinor: 1.5 },
        { account: 'b', direction: 'credit', amountMinor: 1.5 },
      ]),
    ).toThrow(UnbalancedJournalError);
    expect(() =>
      assertBalanced([
        { account: 'a', direction: 'debit', amountMinor: 0 },
        { account: 'b', direction: 'credit', amountMinor: 0 },
      ]),
    ).toThrow(UnbalancedJournalError);
    expect(() => assertBalanced([{ account: 'a', direction: 'debit', amountMinor: 5 }])).toThrow(UnbalancedJournalError);
  });
});
