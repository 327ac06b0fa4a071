import { describe, expect, it } from '@jest/globals';
import { conflictRetryAfterSeconds, inFlightWaitBudgetMs, nextPollDelayMs } from './retry-after.js';

const now = new Date('2026-01-01T00:00:00Z');
const inMs = (ms: number) => new Date(now.getTime() + ms);

describe('conflictRetryAfterSeconds', () => {
  it('hints 1 s while the lease has longer to run, not the lease time left', () => {
    expect(conflictRetryAfterSeconds(inMs(29_500), now)).toBe(1);
  });

  it('takes another hint, capped by the lease', () => {
    expect(conflictRetryAfterSeconds(inMs(29_500), now, 3)).toBe(3);
    expect(conflictRetryAfterSeconds(inMs(2_200), now, 10)).toBe(3);
  });

  it('is at least 1 s (whole seconds) when the lease ran out or is unknown', () => {
    expect(conflictRetryAfterSeconds(inMs(-5_000), now, 5)).toBe(1);
    expect(conflictRetryAfterSeconds(null, now)).toBe(1);
  });
});

describe('inFlightWaitBudgetMs', () => {
  it('is the configured wait while the lease runs longer', () => {
    expect(inFlightWaitBudgetMs(5_000, inMs(30_000), now)).toBe(5_000);
  });

  it('never runs past the lease: clamped to its remaining time', () => {
    expect(inFlightWaitBudgetMs(5_000, inMs(1_200), now)).toBe(1_200);
    expect(inFlightWaitBudgetMs(5_000, inMs(-1), now)).toBe(0);
  });

  it('is 0 when waiting is off or there is no lease', () => {
    expect(inFlightWaitBudgetMs(0, inMs(30_000), now)).toBe(0);
    expect(inFlightWaitBudgetMs(5_000, null, now)).toBe(0);
  });
});

describe('nextPollDelayMs', () => {
  it('starts at 50 ms and doubles up to 500 ms', () => {
    const delays: number[] = [];
    let delay: number | null = null;
    for (let i = 0; i < 6; i++) delays.push((delay = nextPollDelayMs(delay)));
    expect(delays).toEqual([50, 100, 200, 400, 500, 500]);
  });
});
