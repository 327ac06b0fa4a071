import { describe, expect, it } from '@jest/globals';
import { isDuplicateKey, isStoreUnavailable, isWriteConflict } from './mongo-errors.js';

const named = (name: string, message = '', extra: object = {}) => Object.assign(new Error(message), { name, ...extra });

describe('mongo error classification', () => {
  it('recognises duplicate keys and write conflicts by code', () => {
    expect(isDuplicateKey({ code: 11000 })).toBe(true);
    expect(isWriteConflict({ code: 112 })).toBe(true);
    expect(isDuplicateKey({ code: 112 })).toBe(false);
  });

  it.each([
    ['server selection', named('MongoServerSelectionError')],
    ['mongoose server selection', named('MongooseServerSelectionError')],
    ['network error', named('MongoNetworkError')],
    ['bulk write wrapping a refused connection', named('MongoBulkWriteError', 'connect ECONNREFUSED 127.0.0.1:1')],
    ['transient label', named('MongoServerError', 'x', { hasErrorLabel: (l: string) => l === 'TransientTransactionError' })],
    ['wrapped in a cause', Object.assign(new Error('outer'), { cause: named('MongoNetworkError') })],
    ['a write conflict that outlived the retries', named('MongoServerError', 'WriteConflict', { code: 112 })],
  ])('treats %s as store unavailable', (_, error) => {
    expect(isStoreUnavailable(error)).toBe(true);
  });

  it.each([
    ['a duplicate key', named('MongoServerError', 'E11000', { code: 11000 })],
    ['a validation error', named('ValidationError', 'ECONNREFUSED in text')],
    ['a plain error', new Error('boom')],
  ])('does not treat %s as store unavailable', (_, error) => {
    expect(isStoreUnavailable(error)).toBe(false);
  });
});
