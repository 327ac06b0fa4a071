import { describe, expect, it } from '@jest/globals';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SlidingWindowCounterStorage } from './rate-limit.storage.js';

const WINDOW = 60_000;

function storageAt(start = 1_000_000) {
  const clock = { now: start };
  const storage = new SlidingWindowCounterStorage(() => clock.now);
  const hit = (key = 'tenant:acme', limit = 3) => storage.increment(key, WINDOW, limit);
  return { clock, storage, hit };
}

describe('SlidingWindowCounterStorage', () => {
  it('counts a first window exactly and does not count refusals', async () => {
    const { hit, storage } = storageAt();
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await hit());
    expect(results.map((r) => r.isBlocked)).toEqual([false, false, false, true, true]);
    expect(storage.storage.get('tenant:acme')).toMatchObject({ current: 3, previous: 0 });
    expect(results[3].timeToBlockExpire).toBe(60);
  });

  it('answers 429 at a limit of 1,000,000 - no RangeError, and one fixed-size record however many hits', async () => {
    const { hit, storage } = storageAt();
    const limit = 1_000_000;
    let admitted = 0;
    for (let i = 0; i < limit; i++) if (!(await hit('tenant:big', limit)).isBlocked) admitted++;
    expect(admitted).toBe(limit);
    const refused = await hit('tenant:big', limit);
    expect(refused.isBlocked).toBe(true);
    expect(refused.timeToBlockExpire).toBeGreaterThanOrEqual(1);
    // O(1) state: two counts and a window start, not one entry per hit.
    expect(Object.keys(storage.storage.get('tenant:big')!).sort()).toEqual(['current', 'previous', 'windowStart']);
  });

  it('slides: the previous window counts for the part of it still inside the last minute', async () => {
    const { clock, hit, storage } = storageAt();
    for (let i = 0; i < 3; i++) await hit();
    clock.now += WINDOW; // next window: previous = 3, weight 1 -> still full
    const atEdge = await hit();
    expect(atEdge.isBlocked).toBe(true);
    // One hit frees when 3 x (1 - f) < 3 - 0 = 3, i.e. just after the edge; Retry-After is at least a second.
    expect(atEdge.timeToBlockExpire).toBe(1);
    clock.now += WINDOW / 3; // weight 2/3: estimate 2 -> one more fits, then full again
    expect((await hit()).isBlocked).toBe(false);
    const full = await hit();
    expect(full.isBlocked).toBe(true);
    // 3 x (1 - f) + 1 < 3 when f > 1/3: at once; ceil to 1 s. With the current window full it waits for the next one.
    expect(full.timeToBlockExpire).toBeGreaterThanOrEqual(1);
    expect(full.timeToBlockExpire).toBeLessThanOrEqual(40);
    clock.now += 2 * WINDOW; // two windows later nothing counts
    expect((await hit()).isBlocked).toBe(false);
    expect(storage.storage.get('tenant:acme')).toMatchObject({ previous: 0, current: 1 });
  });

  it('a Retry-After that is honoured is enough', async () => {
    const { clock, hit } = storageAt();
    for (let i = 0; i < 3; i++) {
      await hit();
      clock.now += 10_000;
    }
    clock.now += WINDOW - 30_000 + 5_000; // 5 s into the next window: previous 3, current 0, estimate 2.75
    for (let round = 0; round < 20; round++) {
      const result = await hit();
      if (result.isBlocked) {
        clock.now += result.timeToBlockExpire * 1000;
        expect((await hit()).isBlocked).toBe(false);
      }
    }
  });

  it('drops a key once both its windows are over, and keeps a live one', async () => {
    const { clock, hit, storage } = storageAt();
    await hit('key:a');
    clock.now += WINDOW + 1;
    await hit('key:b');
    storage.evictIdleRecords(clock.now + WINDOW);
    expect([...storage.storage.keys()]).toEqual(['key:b']);
    storage.evictIdleRecords(clock.now + 2 * WINDOW);
    expect(storage.storage.size).toBe(0);
  });

  it('keeps a tracked key small: under 400 bytes of heap each', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { hit, storage } = storageAt();
    gc();
    const before = process.memoryUsage().heapUsed;
    const keys = 100_000;
    // Keys as the guard builds them: name, tenant and a 43-character SHA-256 digest.
    for (let i = 0; i < keys; i++) await hit(`key:acme:${String(i).padStart(43, 'x')}`, 60);
    gc();
    const perKey = (process.memoryUsage().heapUsed - before) / keys;
    process.stdout.write(`rate-limit storage: ${perKey.toFixed(0)} bytes per tracked key\n`);
    expect(storage.storage.size).toBe(keys);
    expect(perKey).toBeLessThan(400);
    storage.onApplicationShutdown();
  });
});
