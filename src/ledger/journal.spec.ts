import { describe, expect, it } from '@jest/globals';
import { assertBalanced, paidOrderJournal, refundJournal, UnbalancedJournalError, type JournalLine } from './journal.js';

const net = (lines: JournalLine[], account: string) =>
  lines.filter((l) => l.account === account).reduce((sum, l) => sum + (l.direction === 'debit' ? l.amountMinor : -l.amountMinor), 0);

describe('journal', () => {
  it('posts a paid order as sale + settlement that nets to zero', () => {
    const lines = paidOrderJournal(2500);
    expect(() => assertBalanced(lines)).not.toThrow();
    expect(net(lines, 'customer_receivable')).toBe(0);
    expect(net(lines, 'revenue')).toBe(-2500);
    expect(net(lines, 'payment_provider_clearing')).toBe(2500);
  });

  it('posts a refund as the exact reversal of its amount: a full refund nets every account to zero', () => {
    const lines = refundJournal(2500);
    expect(() => assertBalanced(lines)).not.toThrow();
    const both = [...paidOrderJournal(2500), ...lines];
    for (const account of ['customer_receivable', 'revenue', 'payment_provider_clearing']) expect(net(both, account)).toBe(0);
    // A partial refund leaves the rest of the sale in revenue and clearing.
    const partial = [...paidOrderJournal(2500), ...refundJournal(1000)];
    expect(net(partial, 'revenue')).toBe(-1500);
    expect(net(partial, 'payment_provider_clearing')).toBe(1500);
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
