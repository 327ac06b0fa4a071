import { describe, expect, it } from '@jest/globals';
import {
  defaultOrderBody,
  defaultRefundBody,
  deriveBodies,
  refundBodyFor,
  getPath,
  reorderKeys,
  setPath,
  varyField,
  type Json,
} from './bodies.js';

const ORDER = defaultOrderBody('abc123');
const SPEC = { body: ORDER, varyField: 'customerId', outageField: 'paymentMethod.token', outageValue: 'tok_provider_down' };

describe('bodies', () => {
  it("the default order uses the run's own customer id and the card that succeeds", () => {
    expect(ORDER).toMatchObject({ customerId: 'conformance_abc123', paymentMethod: { token: 'tok_visa' } });
  });

  it("reorders every object's keys but keeps array order", () => {
    const body: Json = { a: 1, b: { c: 2, d: 3 }, list: [{ x: 1, y: 2 }, 'z'] };
    expect(JSON.stringify(reorderKeys(body))).toBe('{"list":[{"y":2,"x":1},"z"],"b":{"d":3,"c":2},"a":1}');
    expect(JSON.parse(JSON.stringify(reorderKeys(body)))).toEqual(body);
  });

  it('reads and replaces dotted paths with array indices, never adding a field', () => {
    expect(getPath(ORDER, 'items.0.quantity')).toBe(1);
    expect(getPath(ORDER, 'items.3.quantity')).toBeUndefined();
    expect(setPath(ORDER, 'items.0.quantity', 7)).toMatchObject({ items: [{ quantity: 7 }] });
    expect(setPath(ORDER, 'currency', 'EUR')).toMatchObject({ currency: 'EUR' });
    expect(ORDER).toMatchObject({ currency: 'USD', items: [{ quantity: 1 }] });
    expect(() => setPath(ORDER, 'paymentMethod.tokne', 'x')).toThrow('"paymentMethod.tokne" is not in the body');
  });

  it('varies a string, a number or a boolean, and refuses anything else', () => {
    expect(varyField(ORDER, 'customerId')).toMatchObject({ customerId: 'conformance_abc123_other' });
    expect(varyField(ORDER, 'items.0.quantity')).toMatchObject({ items: [{ quantity: 2 }] });
    expect(varyField({ gift: false }, 'gift')).toEqual({ gift: true });
    expect(() => varyField(ORDER, 'items')).toThrow('it is array, not a string, number or boolean');
    expect(() => varyField(ORDER, 'nope')).toThrow('not in the body');
  });

  it('derives the four bodies, serialized once', () => {
    const bodies = deriveBodies(SPEC, true);
    expect(bodies.base).toBe(JSON.stringify(ORDER));
    expect(JSON.parse(bodies.reordered)).toEqual(ORDER);
    expect(bodies.reordered).not.toBe(bodies.base);
    expect(JSON.parse(bodies.other)).toMatchObject({ customerId: 'conformance_abc123_other' });
    expect(JSON.parse(bodies.outage!)).toMatchObject({ paymentMethod: { token: 'tok_provider_down' } });
  });

  it('takes the bodies it is given, and no outage body when that row is off', () => {
    const bodies = deriveBodies({ ...SPEC, otherBody: { other: true }, outageBody: { down: true } }, true);
    expect([bodies.other, bodies.outage]).toEqual(['{"other":true}', '{"down":true}']);
    expect(deriveBodies({ ...SPEC, body: { name: 'x' }, varyField: 'name', outageField: 'missing' }, false).outage).toBeNull();
  });

  it('refuses another body that is the same JSON', () => {
    expect(() => deriveBodies({ ...SPEC, otherBody: ORDER }, true)).toThrow('must differ');
  });
});

describe('refund bodies', () => {
  it('defaults to the amount and a reason, the amount set per request', () => {
    expect(defaultRefundBody('amountMinor', 'requested_by_customer')).toEqual({ reason: 'requested_by_customer', amountMinor: 0 });
    expect(defaultRefundBody('amount.value', 'r')).toEqual({ reason: 'r', amount: { value: 0 } });
    expect(refundBodyFor(defaultRefundBody('amountMinor', 'r'), 'amountMinor', 51)).toBe('{"reason":"r","amountMinor":51}');
  });

  it("sets the amount in a team's own body, which must have the field", () => {
    expect(refundBodyFor({ money: { minor: 1, currency: 'EUR' }, note: 'x' }, 'money.minor', 7)).toBe(
      '{"money":{"minor":7,"currency":"EUR"},"note":"x"}',
    );
    expect(() => refundBodyFor({ amount: 1 }, 'amountMinor', 7)).toThrow('"amountMinor" is not in the body');
  });
});
