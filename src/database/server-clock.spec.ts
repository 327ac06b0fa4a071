import { describe, expect, it } from '@jest/globals';
import { betterSample, MAX_SAMPLE_ROUND_TRIP_MS, sampleOf, serverTimeAt } from './server-clock.js';

describe('server clock arithmetic', () => {
  const server = new Date('2026-06-01T12:00:00.000Z');

  it('pins the server reading to the middle of the round trip', () => {
    expect(sampleOf(server, 1_000, 1_040)).toEqual({ serverMs: server.getTime(), monotonicMs: 1_020, roundTripMs: 40 });
  });

  it('advances by the monotonic clock only: whatever this host\'s wall clock says, now is server time', () => {
    const sample = sampleOf(server, 1_000, 1_040);
    // 30 s later on the monotonic clock; the host clock may be minutes off or have jumped meanwhile.
    expect(new Date(serverTimeAt(sample, 31_020)).toISOString()).toBe('2026-06-01T12:00:30.000Z');
  });

  it('keeps the previous reading when a new one took too long to be trusted', () => {
    const good = sampleOf(server, 0, 10);
    const slow = sampleOf(new Date(server.getTime() + 5_000), 20_000, 20_000 + MAX_SAMPLE_ROUND_TRIP_MS + 1);
    expect(betterSample(good, slow)).toBe(good);
    expect(betterSample(null, slow)).toBe(slow);
    const fresh = sampleOf(new Date(server.getTime() + 5_000), 5_000, 5_020);
    expect(betterSample(good, fresh)).toBe(fresh);
  });
});
