import { describe, expect, it } from '@jest/globals';
import { conflictRetryAfterSeconds, inFlightWaitBudgetMs, nextPollDelayMs, resumableUntil } from './timing.js';
import { IdempotencyKeyReusedError } from '../errors.js';

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

/** Any error that tells its client to retry the same request (the app's provider outage is one). */
class ProviderOutage extends Error {
  readonly retryAfterSeconds = 2;
}

describe('resumableUntil', () => {
  it('leaves an attempt failed by a provider outage (503 + Retry-After) to its client for the window', () => {
    expect(resumableUntil(new ProviderOutage('provider down'), now, 300_000)).toEqual(new Date(now.getTime() + 300_000));
  });

  it('gives anything else to the reaper at once: a crash-like error, a domain error without Retry-After', () => {
    expect(resumableUntil(new Error('boom'), now, 300_000)).toBeNull();
    expect(resumableUntil(new IdempotencyKeyReusedError(), now, 300_000)).toBeNull();
  });

  it('has no window when it is configured to 0', () => {
    expect(resumableUntil(new ProviderOutage('provider down'), now, 0)).toBeNull();
  });
});
