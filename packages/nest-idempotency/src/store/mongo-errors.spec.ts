import { describe, expect, it } from '@jest/globals';
import { isDuplicateKey, isStoreTimeout, isStoreUnavailable, isWriteConflict } from './mongo-errors.js';

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
    ['a socket timeout (frozen server)', named('MongoNetworkTimeoutError', 'connection 3 to 127.0.0.1:1 timed out')],
    ['no pooled connection in time', named('MongoWaitQueueTimeoutError', 'Timed out while checking out a connection from connection pool')],
    ['an operation timeout', named('MongoOperationTimeoutError')],
    ['a cleared pool', named('MongoPoolClearedError')],
    ['a closed pool', named('MongoPoolClosedError')],
    ['a primary stepping down', named('MongoServerError', 'not primary', { code: 10107 })],
    ['an interrupted operation', named('MongoServerError', 'interrupted', { code: 11602 })],
    ['a transaction the server forgot', named('MongoServerError', 'NoSuchTransaction', { code: 251 })],
    [
      'the session confusion after a timed-out abort (emulator)',
      named('MongoBulkWriteError', 'transaction already in progress for this session', { code: 14, codeName: 'BadValue' }),
    ],
    ["the driver's own session confusion", named('MongoTransactionError', 'Transaction already in progress')],
  ])('treats %s as store unavailable', (_, error) => {
    expect(isStoreUnavailable(error)).toBe(true);
  });

  it.each([
    ['a duplicate key', named('MongoServerError', 'E11000', { code: 11000 })],
    ['a validation error', named('ValidationError', 'ECONNREFUSED in text')],
    ['a plain error', new Error('boom')],
    ['a bad value from the server', named('MongoServerError', 'unknown operator: $foo', { code: 14, codeName: 'BadValue' })],
    ['a domain error mentioning a transaction', named('IllegalTransitionError', 'transaction already in progress')],
  ])('does not treat %s as store unavailable', (_, error) => {
    expect(isStoreUnavailable(error)).toBe(false);
  });

  it('tells a store that did not answer in time from one that refused', () => {
    expect(isStoreTimeout(named('MongoNetworkTimeoutError'))).toBe(true);
    expect(isStoreTimeout(named('MongoWaitQueueTimeoutError'))).toBe(true);
    expect(isStoreTimeout(named('MongooseServerSelectionError'))).toBe(true);
    expect(isStoreTimeout(Object.assign(new Error('bulk'), { cause: named('MongoNetworkTimeoutError') }))).toBe(true);
    expect(isStoreTimeout(named('MongoNetworkError', 'connect ECONNRESET'))).toBe(false);
    expect(isStoreTimeout(named('MongoServerError', 'WriteConflict', { code: 112 }))).toBe(false);
  });
});

describe("Mongoose's buffering timeout (an app with bufferCommands on)", () => {
  it('is a store that cannot be reached in time: 503 + Retry-After, never a 500', () => {
    const error = Object.assign(new Error('Operation `widgets.insertOne()` buffering timed out after 10000ms'), { name: 'MongooseError' });
    expect(isStoreUnavailable(error)).toBe(true);
    expect(isStoreTimeout(error)).toBe(true);
    expect(isStoreUnavailable(Object.assign(new Error('Cast to ObjectId failed'), { name: 'MongooseError' }))).toBe(false);
  });
});
