import { describe, expect, it } from '@jest/globals';
import { RateLimiter } from './rate-limiter.js';

describe('RateLimiter', () => {
  it('allows a burst of the limit, then asks to wait until a token refills', () => {
    const limiter = new RateLimiter(3);
    expect([limiter.take('k', 0), limiter.take('k', 0), limiter.take('k', 0)]).toEqual([0, 0, 0]);
    expect(limiter.take('k', 0)).toBe(20);
    expect(limiter.take('k', 20_000)).toBe(0);
  });

  it('keeps buckets apart', () => {
    const limiter = new RateLimiter(1);
    expect(limiter.take('a', 0)).toBe(0);
    expect(limiter.take('b', 0)).toBe(0);
    expect(limiter.take('a', 0)).toBeGreaterThan(0);
  });

  it('is unlimited at 0', () => {
    const limiter = new RateLimiter(0);
    for (let i = 0; i < 1000; i++) expect(limiter.take('k', 0)).toBe(0);
  });

  it('forgets the oldest buckets past its size bound', () => {
    const limiter = new RateLimiter(1, 2);
    limiter.take('a', 0);
    limiter.take('b', 0);
    limiter.take('c', 0);
    expect(limiter.take('a', 0)).toBe(0);
  });
});
