import { describe, expect, it } from '@jest/globals';
import { mergeRounds, type RoundMeasurement } from './rounds.js';

const round = (requests: number, cpuMsPerRequest: number | null, extra: Partial<RoundMeasurement> = {}): RoundMeasurement => ({
  durationSeconds: 2,
  requests,
  reqPerSec: requests / 2,
  p50Ms: 1,
  p99Ms: 10,
  errors: 0,
  non2xx: 0,
  statusCounts: { '200': requests },
  cpuMsPerRequest,
  ...extra,
});

describe('mergeRounds', () => {
  it('weighs CPU per request by each round requests (total CPU over total requests), and adds up the rest', () => {
    // 100 requests at 1 ms and 300 at 0.5 ms: 250 ms over 400 requests.
    const merged = mergeRounds([round(100, 1, { p99Ms: 30, errors: 1 }), round(300, 0.5, { p99Ms: 10 }), round(200, 0.5, { p99Ms: 20 })]);
    expect(merged.requests).toBe(600);
    expect(merged.durationSeconds).toBe(6);
    expect(merged.reqPerSec).toBe(100);
    expect(merged.cpuMsPerRequest).toBeCloseTo((100 * 1 + 300 * 0.5 + 200 * 0.5) / 600, 10);
    expect(merged.p99Ms).toBe(20);
    expect(merged.errors).toBe(1);
    expect(merged.statusCounts).toEqual({ '200': 600 });
  });

  it('has no CPU figure when a round has none, and weighs store commands like CPU', () => {
    expect(mergeRounds([round(10, 1), round(10, null)]).cpuMsPerRequest).toBeNull();
    const store = (commandsPerRequest: number) => ({ commandsPerRequest, transactionsPerRequest: 0, abortsPerRequest: 0 });
    const merged = mergeRounds([round(10, 1, { store: store(1) }), round(30, 1, { store: store(2) })]);
    expect(merged.store?.commandsPerRequest).toBeCloseTo(1.75, 10);
    expect(mergeRounds([round(10, 1), round(30, 1)]).store).toBeUndefined();
    const named = (byName: Record<string, number>) => ({ ...store(1), byName });
    const both = mergeRounds([
      round(10, 1, { store: named({ 'find orders': 1 }) }),
      round(30, 1, { store: named({ 'find orders': 2, insert: 1 }) }),
    ]);
    expect(both.store?.byName).toEqual({ 'find orders': 1.75, insert: 0.75 });
  });

  it('keeps every round its own figures, in order, for the ratios judged round by round', () => {
    const merged = mergeRounds([round(100, 1), round(300, 0.5)]);
    expect(merged.rounds).toEqual([
      { requests: 100, durationSeconds: 2, reqPerSec: 50, cpuMsPerRequest: 1 },
      { requests: 300, durationSeconds: 2, reqPerSec: 150, cpuMsPerRequest: 0.5 },
    ]);
  });

  it('returns a single round as it is and refuses none', () => {
    const only = round(5, 2);
    expect(mergeRounds([only])).toBe(only);
    expect(() => mergeRounds([])).toThrow('no rounds');
  });
});
