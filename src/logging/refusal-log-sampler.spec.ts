import { describe, expect, it } from '@jest/globals';
import { RefusalLogSampler } from './refusal-log-sampler.js';

describe('RefusalLogSampler', () => {
  it('logs at most perSecond refusals a second and reports the skipped ones on the next logged line', () => {
    let now = 10_000;
    const sampler = new RefusalLogSampler(2, () => now);
    const first = Array.from({ length: 5 }, () => sampler.admit());
    expect(first.map((decision) => decision.log)).toEqual([true, true, false, false, false]);
    now += 999;
    expect(sampler.admit().log).toBe(false);
    now += 1;
    expect(sampler.admit()).toEqual({ log: true, skippedBefore: 4 });
    expect(sampler.admit()).toEqual({ log: true, skippedBefore: 0 });
  });

  it('logs none at 0 and keeps counting', () => {
    const sampler = new RefusalLogSampler(0, () => 0);
    expect(Array.from({ length: 100 }, () => sampler.admit().log).some(Boolean)).toBe(false);
  });
});
