import { describe, expect, it } from '@jest/globals';
import { formatFrames, topFrames, topFramesIn, topOwnersIn, type CpuProfile } from './profile.js';

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

  it('groups self time by owner: an npm package, a folder of ours, the workspace package, a Node module, a native frame', () => {
    const owned: CpuProfile = {
      startTime: 0,
      nodes: [
        { id: 1, callFrame: { functionName: 'handle', url: 'file:///repo/dist/src/orders/orders.controller.js', lineNumber: 1 } },
        { id: 2, callFrame: { functionName: 'a', url: 'file:///repo/node_modules/@nestjs/core/router/x.js', lineNumber: 1 } },
        { id: 3, callFrame: { functionName: 'b', url: 'file:///repo/node_modules/@nestjs/core/injector/y.js', lineNumber: 1 } },
        { id: 4, callFrame: { functionName: 'c', url: 'file:///repo/node_modules/fastify/lib/reply.js', lineNumber: 1 } },
        { id: 5, callFrame: { functionName: 'lookUp', url: 'file:///repo/packages/nest-idempotency/dist/protocol/x.js', lineNumber: 1 } },
        { id: 6, callFrame: { functionName: 'Hash', url: 'node:internal/crypto/hash', lineNumber: 1 } },
        { id: 7, callFrame: { functionName: 'writeBuffer', url: '', lineNumber: -1 } },
      ],
      samples: [1, 2, 3, 4, 5, 6, 7, 2],
      timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
    };
    expect(topOwnersIn(owned, 10, '/repo', [{ fromUs: 0, toUs: 100_000 }]).map((frame) => [frame.name, frame.selfMs])).toEqual([
      ['~@nestjs/core', 3],
      ['dist/src/orders', 1],
      ['~fastify', 1],
      ['packages/nest-idempotency', 1],
      ['node:internal/crypto', 1],
      ['writeBuffer', 1],
    ]);
  });
});
