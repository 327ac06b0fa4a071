import { describe, expect, it } from '@jest/globals';
import { parseIdempotencyKey } from './key-header.js';
import { IdempotencyKeyInvalidError } from '../errors.js';

describe('the two syntaxes of Idempotency-Key', () => {
  it("reads the draft's sf-string as the same key as the bare value, escapes included", () => {
    expect(parseIdempotencyKey('"abc"')).toBe(parseIdempotencyKey('abc'));
    expect(parseIdempotencyKey('"a\\"b"')).toBe('a"b');
    expect(parseIdempotencyKey('"a\\\\b"')).toBe('a\\b');
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
  });

  it('refuses malformed quoting with idempotency_key_invalid', () => {
    for (const header of ['"abc', '"a\\qb"', '"abc";v=1', '"abc" "def"', '""', `"${'x'.repeat(256)}"`, '"é"']) {
      expect(() => parseIdempotencyKey(header)).toThrow(IdempotencyKeyInvalidError);
    }
  });

  it('leaves bare keys as they were, quotes inside them included', () => {
    expect(parseIdempotencyKey('a"b')).toBe('a"b');
    expect(parseIdempotencyKey('abc"')).toBe('abc"');
  });
});
