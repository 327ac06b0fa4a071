import { describe, expect, it } from '@jest/globals';
import { assertTransition, canTransition, isCreateInProgress, isFinal, ORDER_STATES, type OrderState } from './order-state.js';
import { MAX_ORDER_AMOUNT_MINOR, orderAmountMinor } from './order-amount.js';
import { AmountOutOfRangeError } from './orders.errors.js';

const ALLOWED: [OrderState, OrderState][] = [
  ['pending', 'charged'],
  ['pending', 'processing'],
  ['pending', 'authorized'],
  ['pending', 'failed'],
  ['processing', 'charged'],
  ['processing', 'failed'],
  ['authorized', 'captured'],
  ['authorized', 'voided'],
  ['authorized', 'expired'],
  ['charged', 'saved'],
  ['saved', 'partially_refunded'],
  ['saved', 'refunded'],
  ['captured', 'partially_refunded'],
  ['captured', 'refunded'],
  ['partially_refunded', 'refunded'],
  // A refund the provider failed after it succeeded gives its amount back (refunds/refund-failure.ts).
  ['refunded', 'partially_refunded'],
  ['refunded', 'saved'],
  ['refunded', 'captured'],
  ['partially_refunded', 'saved'],
  ['partially_refunded', 'captured'],
];

describe('order state machine', () => {
  const pairs = ORDER_STATES.flatMap((from) => ORDER_STATES.map((to) => [from, to] as [OrderState, OrderState]));

  it.each(pairs)('%s -> %s is allowed only if it is in the table', (from, to) => {
    const allowed = ALLOWED.some(([a, b]) => a === from && b === to);
    expect(canTransition(from, to)).toBe(allowed);
    if (allowed) expect(() => assertTransition(from, to)).not.toThrow();
    else expect(() => assertTransition(from, to)).toThrow(/cannot move/);
  });

  it('never fails an order the provider charged or authorized', () => {
    for (const from of ['charged', 'saved', 'authorized', 'captured', 'partially_refunded', 'refunded'] as const) {
      expect(canTransition(from, 'failed')).toBe(false);
      // A refund failing late undoes that refund, never the charge: no way back to before the money moved.
      for (const before of ['pending', 'processing', 'authorized', 'charged'] as const) expect(canTransition(from, before)).toBe(false);
    }
  });

  it('ends in voided, expired or failed; refunded stays open to a refund the provider fails late', () => {
    expect(ORDER_STATES.filter(isFinal)).toEqual(['voided', 'expired', 'failed']);
  });

  it('lets the create workflow drive only pending and charged orders', () => {
    expect(ORDER_STATES.filter(isCreateInProgress)).toEqual(['pending', 'charged']);
  });
});

describe('orderAmountMinor', () => {
  it('sums quantity x unit price in integer minor units', () => {
    expect(
      orderAmountMinor([
        { quantity: 2, unitPriceMinor: 1250 },
        { quantity: 1, unitPriceMinor: 1 },
      ]),
    ).toBe(2501);
    expect(
      orderAmountMinor([
        { quantity: 3, unitPriceMinor: 0 },
        { quantity: 1, unitPriceMinor: 5 },
      ]),
    ).toBe(5);
  });

  it('refuses a total of zero: there would be nothing to charge or journal', () => {
    expect(() => orderAmountMinor([{ quantity: 3, unitPriceMinor: 0 }])).toThrow(AmountOutOfRangeError);
  });

  it('accepts exactly the limit and refuses one more', () => {
    expect(orderAmountMinor([{ quantity: 1, unitPriceMinor: MAX_ORDER_AMOUNT_MINOR }])).toBe(MAX_ORDER_AMOUNT_MINOR);
    expect(() => orderAmountMinor([{ quantity: 1, unitPriceMinor: MAX_ORDER_AMOUNT_MINOR + 1 }])).toThrow(AmountOutOfRangeError);
  });

  it('refuses totals past 2^53 instead of returning a rounded number', () => {
    // 100 lines of 10^15 = 10^17: a float sum would still produce a (rounded) number.
    const items = Array.from({ length: 100 }, () => ({ quantity: 10_000, unitPriceMinor: 100_000_000_000 }));
    expect(() => orderAmountMinor(items)).toThrow(AmountOutOfRangeError);
    expect(() => orderAmountMinor([{ quantity: Number.MAX_SAFE_INTEGER, unitPriceMinor: 3 }])).toThrow(AmountOutOfRangeError);
  });

  it('refuses non-integers', () => {
    expect(() => orderAmountMinor([{ quantity: 1.5, unitPriceMinor: 100 }])).toThrow(AmountOutOfRangeError);
  });
});
