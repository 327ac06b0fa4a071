import { describe, expect, it } from '@jest/globals';
import type { ProviderSettlement } from '../payments/provider-statement.port.js';
import { afterRecheck, compareSettlements, netClearing } from './settlement-compare.js';
import { inFlightReason } from './work-in-flight.js';

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

  it('leaves a difference on a key with work in flight out of the mismatches, listed apart; a matching key in flight still matches', () => {
    const ledger = netClearing([
      { orderId: order(1), direction: 'debit', amountMinor: 2500, currency: 'USD' },
      { orderId: order(2), direction: 'debit', amountMinor: 2500, currency: 'USD' },
    ]);
    const inFlight = new Map([
      [order(1), 'refund_in_flight'],
      [order(2), 'refund_in_flight'],
    ]);
    const report = compareSettlements(period, [charge(1, 2100), charge(2, 2500)], ledger, inFlight);
    expect(report).toMatchObject({ compared: 2, matched: 1, mismatches: [] });
    expect(report.inFlight).toEqual([
      { reason: 'refund_in_flight', chargeKey: `charge:${order(1)}`, orderId: order(1), ledgerMinor: 2500, providerMinor: 2100 },
    ]);
  });

  it('after a re-check reports only the mismatches still there', () => {
    const ledger = netClearing([
      { orderId: order(1), direction: 'debit', amountMinor: 2500, currency: 'USD' },
      { orderId: order(2), direction: 'debit', amountMinor: 2500, currency: 'USD' },
    ]);
    const first = compareSettlements(period, [charge(1, 2400), charge(2, 2400)], ledger);
    const second = compareSettlements(period, [charge(1, 2500), charge(2, 2400)], ledger);
    expect(afterRecheck(first, second)).toMatchObject({
      compared: 2,
      matched: 1,
      rechecked: 2,
      counts: { missing_in_ledger: 0, missing_at_provider: 0, amount_differs: 1 },
      mismatches: [expect.objectContaining({ orderId: order(2) })],
    });
  });
});

describe('inFlightReason', () => {
  const settled = { _id: order(1), state: 'saved', capturedMinor: 2500, refundedMinor: 400, refundableMinor: 2100, pendingAction: null };
  it('names a refund reserved and not final, a capture or void held, a create not saved; nothing for settled work', () => {
    expect(inFlightReason(settled)).toBeNull();
    expect(inFlightReason({ ...settled, refundableMinor: 1700 })).toBe('refund_in_flight');
    expect(inFlightReason({ ...settled, state: 'authorized', pendingAction: { kind: 'capture' } })).toBe('action_in_flight');
    expect(inFlightReason({ ...settled, state: 'charged' })).toBe('charge_in_flight');
    expect(inFlightReason({ _id: order(1), state: 'processing' })).toBe('charge_in_flight');
    expect(inFlightReason({ _id: order(1), state: 'saved' })).toBeNull();
  });
});
