import { describe, expect, it } from '@jest/globals';
import { compareSettlements, netClearing, type ProviderSettlement } from './settlement-compare.js';

const period = { from: new Date('2026-01-01T00:00:00Z'), to: new Date('2026-01-02T00:00:00Z') };
const order = (n: number) => `ord_${String(n).padStart(24, '0')}`;
const charge = (n: number, netMinor: number, currency = 'USD'): ProviderSettlement => ({
  chargeKey: `charge:${order(n)}`,
  chargeId: `ch_${n}`,
  netMinor,
  currency,
  at: new Date('2026-01-01T12:00:00Z'),
});

describe('compareSettlements', () => {
  it('matches equal sides and names every kind of mismatch once', () => {
    const ledger = netClearing([
      { orderId: order(1), direction: 'debit', amountMinor: 2500, currency: 'USD' },
      { orderId: order(2), direction: 'debit', amountMinor: 100, currency: 'USD' },
      { orderId: order(4), direction: 'debit', amountMinor: 700, currency: 'USD' },
      { orderId: order(5), direction: 'debit', amountMinor: 900, currency: 'USD' },
    ]);
    const report = compareSettlements(period, [charge(1, 2500), charge(2, 150), charge(3, 300), charge(5, 900, 'EUR')], ledger);
    expect(report.compared).toBe(5);
    expect(report.matched).toBe(1);
    expect(report.mismatches.map((m) => [m.orderId, m.kind])).toEqual([
      [order(2), 'amount_differs'],
      [order(3), 'missing_in_ledger'],
      [order(4), 'missing_at_provider'],
      [order(5), 'amount_differs'],
    ]);
    expect(report.counts).toEqual({ missing_in_ledger: 1, missing_at_provider: 1, amount_differs: 2 });
  });

  it('nets refunds (credits on clearing) and matches a charge refunded in full against nothing', () => {
    const ledger = netClearing([
      { orderId: order(1), direction: 'debit', amountMinor: 2500, currency: 'USD' },
      { orderId: order(1), direction: 'credit', amountMinor: 2500, currency: 'USD' },
    ]);
    expect(compareSettlements(period, [], ledger).mismatches).toEqual([]);
    expect(compareSettlements(period, [charge(1, 0)], ledger).mismatches).toEqual([]);
  });
});
