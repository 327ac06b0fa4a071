import { describe, expect, it } from '@jest/globals';
import { formatFrames, topFrames, topFramesIn, type CpuProfile } from './profile.js';

describe('topFrames', () => {
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
      { id: 2, callFrame: { functionName: 'seal', url: 'file:///repo/dist/src/idempotency/response-cipher.js', lineNumber: 9 } },
      { id: 3, callFrame: { functionName: 'serialize', url: 'file:///repo/node_modules/bson/lib/bson.cjs', lineNumber: 99 } },
      { id: 4, callFrame: { functionName: 'seal', url: 'file:///repo/dist/src/idempotency/response-cipher.js', lineNumber: 9 } },
      { id: 5, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
    ],
    samples: [2, 3, 2, 4, 5, 1],
    timeDeltas: [1000, 3000, 1000, 1000, 9000, 4000],
  };

  it('adds self time per function (same function under two call paths counts once), largest first', () => {
    expect(topFrames(profile, 3, '/repo')).toEqual([
      { name: '(root)', selfMs: 4, share: 0.4 },
      { name: 'seal dist/src/idempotency/response-cipher.js:10', selfMs: 3, share: 0.3 },
      { name: 'serialize ~bson/lib/bson.cjs:100', selfMs: 3, share: 0.3 },
    ]);
    expect(formatFrames(topFrames(profile, 1, '/repo'))).toBe('   40.0%        4 ms  (root)');
  });

  it('leaves out idle time and the first skipMs (the boot)', () => {
    expect(topFrames(profile, 5, '/repo', 5).map((frame) => [frame.name, frame.selfMs])).toEqual([
      ['(root)', 4],
      ['seal dist/src/idempotency/response-cipher.js:10', 2],
    ]);
  });

  it('ranks only the samples inside the given windows (monotonic microseconds from the profile start)', () => {
    const timed = { ...profile, startTime: 100_000 };
    // Sample times: 101000, 104000, 105000, 106000, 115000, 119000 us.
    expect(topFramesIn(timed, 5, '/repo', [{ fromUs: 103_000, toUs: 105_500 }]).map((frame) => [frame.name, frame.selfMs])).toEqual([
      ['serialize ~bson/lib/bson.cjs:100', 3],
      ['seal dist/src/idempotency/response-cipher.js:10', 1],
    ]);
    expect(topFramesIn(timed, 5, '/repo', [{ fromUs: 200_000, toUs: 300_000 }])).toEqual([]);
  });
});
