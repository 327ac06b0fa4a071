import { describe, expect, it } from '@jest/globals';
import { backoffDelayMs, planRetry, retryPolicy } from './retry-policy.js';

const fixed = (value: number) => () => value;

describe('retryPolicy', () => {
  it('fills in the defaults', () => {
    expect(retryPolicy()).toMatchObject({
      maxAttempts: 8,
      baseDelayMs: 200,
      maxDelayMs: 10_000,
      deadlineMs: 60_000,
      attemptTimeoutMs: 10_000,
    });
  });

  it('refuses bounds that make no sense, naming them', () => {
    expect(() => retryPolicy({ maxAttempts: 0 })).toThrow('maxAttempts');
    expect(() => retryPolicy({ maxAttempts: 1.5 })).toThrow('maxAttempts');
    expect(() => retryPolicy({ baseDelayMs: -1 })).toThrow('baseDelayMs');
    expect(() => retryPolicy({ deadlineMs: Number.POSITIVE_INFINITY })).toThrow('deadlineMs');
    expect(() => retryPolicy({ attemptTimeoutMs: 0 })).toThrow('attemptTimeoutMs');
    expect(() => retryPolicy({ baseDelayMs: 500, maxDelayMs: 100 })).toThrow('maxDelayMs');
  });
});

describe('backoffDelayMs: full jitter under an exponential, capped ceiling', () => {
  const policy = { baseDelayMs: 100, maxDelayMs: 1_000 };

  it('spans [0, ceiling): the ceiling doubles per retry and stops at the cap', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 10, 60].map((retry) => backoffDelayMs({ ...policy, random: fixed(0.999999) }, retry));
    expect(ceilings).toEqual([99, 199, 399, 799, 999, 999, 999, 999]);
    expect(backoffDelayMs({ ...policy, random: fixed(0) }, 5)).toBe(0);
    expect(backoffDelayMs({ ...policy, random: fixed(0.5) }, 2)).toBe(100);
  });

  it('never leaves the bounds, whatever the draw', () => {
    for (let i = 0; i < 1_000; i++) {
      const retry = 1 + (i % 12);
      const delay = backoffDelayMs({ ...policy, random: Math.random }, retry);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(Math.min(1_000, 100 * 2 ** (retry - 1)));
    }
  });
});

describe('planRetry', () => {
  const policy = retryPolicy({ maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, deadlineMs: 10_000, random: fixed(0.5) });

  it('waits the backoff, raised to Retry-After (a floor, even above the cap)', () => {
    expect(planRetry(policy, 1, 0)).toEqual({ action: 'wait', delayMs: 50 });
    expect(planRetry(policy, 1, 0, 2_000)).toEqual({ action: 'wait', delayMs: 2_000 });
    expect(planRetry(policy, 3, 0, 10)).toEqual({ action: 'wait', delayMs: 200 });
  });

  it('gives up when the attempts are spent', () => {
    expect(planRetry(policy, 4, 0)).toEqual({ action: 'give-up', reason: 'max-attempts' });
  });

  it('gives up at once when the wait would end past the deadline (no sleeping towards a certain give-up)', () => {
    expect(planRetry(policy, 1, 9_000, 1_000)).toEqual({ action: 'give-up', reason: 'deadline' });
    expect(planRetry(policy, 1, 0, 30_000)).toEqual({ action: 'give-up', reason: 'deadline' });
    expect(planRetry(policy, 1, 9_000, 900)).toEqual({ action: 'wait', delayMs: 900 });
  });
});
