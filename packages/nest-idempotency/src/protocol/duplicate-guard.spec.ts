import { describe, expect, it } from '@jest/globals';
import { IdempotencyIntentInvalidError, PossibleDuplicateError } from '../errors.js';
import { idempotencyProblem } from '../http/problem.filter.js';
import { duplicateIntent } from './duplicate-guard.js';

describe('duplicateIntent', () => {
  it('is undefined on a route that did not opt in, whatever the header says', () => {
    expect(duplicateIntent(undefined, { 'idempotency-intent': 'garbage' })).toBeUndefined();
    expect(duplicateIntent(false, {})).toBeUndefined();
  });

  it('checks by default and skips on `new` (any case, trimmed)', () => {
    expect(duplicateIntent(true, {})).toBe('check');
    expect(duplicateIntent(true, { 'idempotency-intent': 'new' })).toBe('new');
    expect(duplicateIntent(true, { 'idempotency-intent': ' NEW ' })).toBe('new');
  });

  it('refuses any other value, or the header sent twice', () => {
    expect(() => duplicateIntent(true, { 'idempotency-intent': 'yes' })).toThrow(IdempotencyIntentInvalidError);
    expect(() => duplicateIntent(true, { 'idempotency-intent': ['new', 'new'] })).toThrow(IdempotencyIntentInvalidError);
  });
});

describe('PossibleDuplicateError as problem+json', () => {
  it('carries Location as a header and a problem member once the earlier request has a result', () => {
    const answer = idempotencyProblem(new PossibleDuplicateError('/v1/orders/ord_1'))!;
    expect(answer.problem).toMatchObject({ status: 409, code: 'possible_duplicate', location: '/v1/orders/ord_1' });
    expect(answer.headers).toEqual({ location: '/v1/orders/ord_1' });
  });

  it('carries Retry-After and no Location while the earlier request is in flight', () => {
    const answer = idempotencyProblem(new PossibleDuplicateError(null, 1))!;
    expect(answer.problem.location).toBeUndefined();
    expect(answer.headers).toEqual({ 'retry-after': '1' });
  });
});
