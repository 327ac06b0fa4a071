import { describe, expect, it } from '@jest/globals';
import { formatSpread, roundRatios, spreadOf, verdictOf, type RoundFigures } from './spread.js';

const round = (cpuMsPerRequest: number | null, reqPerSec = 100): RoundFigures => ({
  requests: 200,
  durationSeconds: 2,
  reqPerSec,
  cpuMsPerRequest,
});

describe('ratios that hold: median of interleaved rounds with its range', () => {
  it('divides round i by round i, on CPU or on req/s', () => {
    const top = [round(1.2, 50), round(0.9, 80), round(1.5, 40)];
    const bottom = [round(1.0, 100), round(0.6, 100), round(1.0, 80)];
    expect(roundRatios(top, bottom, 'cpu')).toEqual([1.2, 1.5, 1.5]);
    expect(roundRatios(top, bottom, 'req/s')).toEqual([0.5, 0.8, 0.5]);
  });

  it('has no per-round ratios when the rows did not take the same turns, or a figure is missing', () => {
    expect(roundRatios([round(1)], [round(1), round(1)], 'cpu')).toBeNull();
    expect(roundRatios(undefined, [round(1)], 'cpu')).toBeNull();
    expect(roundRatios([], [], 'cpu')).toBeNull();
    expect(roundRatios([round(null)], [round(1)], 'cpu')).toBeNull();
    expect(roundRatios([round(1)], [round(0)], 'cpu')).toBeNull();
  });

  it('takes the median (the middle pair averaged for an even count) and keeps every round', () => {
    expect(spreadOf([3, 1, 2, 5, 4])).toEqual({ median: 3, min: 1, max: 5, rounds: [3, 1, 2, 5, 4] });
    expect(spreadOf([4, 1, 2, 3]).median).toBe(2.5);
    expect(() => spreadOf([])).toThrow();
  });

  it('is met only when the whole range meets an upper target, missed only when it is all above it, else unsettled', () => {
    const target = { max: 1.3 };
    expect(verdictOf({ min: 1.0, max: 1.3 }, target)).toBe('met');
    expect(verdictOf({ min: 1.31, max: 2.0 }, target)).toBe('missed');
    expect(verdictOf({ min: 1.09, max: 1.94 }, target)).toBe('unsettled');
  });

  it('judges a lower target the same way', () => {
    const target = { min: 0.6 };
    expect(verdictOf({ min: 0.6, max: 0.9 }, target)).toBe('met');
    expect(verdictOf({ min: 0.3, max: 0.59 }, target)).toBe('missed');
    expect(verdictOf({ min: 0.5, max: 0.7 }, target)).toBe('unsettled');
  });

  it('has no verdict without a target', () => {
    expect(verdictOf({ min: 1, max: 2 }, null)).toBeNull();
    expect(verdictOf({ min: 1, max: 2 }, {})).toBeNull();
  });

  it('prints the median with its range and the number of rounds', () => {
    expect(formatSpread(spreadOf([1.1, 1.234, 1.41, 1.2, 1.3]))).toBe('1.23 (1.10-1.41, 5 rounds)');
  });
});
