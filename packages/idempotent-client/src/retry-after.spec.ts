import { describe, expect, it } from '@jest/globals';
import { parseRetryAfter } from './retry-after.js';

const NOW = Date.parse('2026-11-30T12:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('2', NOW)).toBe(2000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
  });

  it('reads an HTTP-date, IMF-fixdate and the obsolete forms, from now', () => {
    expect(parseRetryAfter('Mon, 30 Nov 2026 12:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Monday, 30-Nov-26 12:01:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Mon Nov 30 12:00:10 2026', NOW)).toBe(10_000);
  });

  it('a date in the past is no wait at all', () => {
    expect(parseRetryAfter('Sun, 29 Nov 2026 12:00:00 GMT', NOW)).toBe(0);
  });

  it('anything else is no Retry-After: the backoff decides', () => {
    for (const value of [undefined, null, '', '  ', 'soon', '-1', '1.5', '+3', '2s']) {
      expect({ value, ms: parseRetryAfter(value, NOW) }).toEqual({ value, ms: undefined });
    }
  });
});
