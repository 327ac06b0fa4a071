import { describe, expect, it } from '@jest/globals';
import { InFlightWaiters } from './in-flight-waiters.js';

describe('InFlightWaiters', () => {
  it('wakes the sleepers of a record when its attempt ends here, long before their timeout', async () => {
    const waiters = new InFlightWaiters();
    waiters.begin('r1');
    expect(waiters.runningHere('r1')).toBe(true);
    const started = Date.now();
    const sleeping = Promise.all([waiters.sleep('r1', 10_000), waiters.sleep('r1', 10_000)]);
    const other = waiters.sleep('r2', 10_000);
    waiters.end('r1');
    await sleeping;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(waiters.runningHere('r1')).toBe(false);
    waiters.end('r2');
    await other;
  });

  it('times out a sleeper when nothing ends', async () => {
    const waiters = new InFlightWaiters();
    const started = Date.now();
    await waiters.sleep('r1', 30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('shares one read among concurrent callers, and a read begun before the end is not reused after it', async () => {
    const waiters = new InFlightWaiters();
    let loads = 0;
    const load = () => new Promise<number>((resolve) => setTimeout(() => resolve(++loads), 10));
    const [a, b, c] = await Promise.all([waiters.read('r1', load), waiters.read('r1', load), waiters.read('r1', load)]);
    expect([a, b, c]).toEqual([1, 1, 1]);
    const stale = waiters.read('r1', load);
    waiters.end('r1');
    const fresh = waiters.read('r1', load);
    expect(await stale).toBe(2);
    expect(await fresh).toBe(3);
  });

  it('bounds the waiters: past the bound enter() refuses until one leaves', () => {
    const waiters = new InFlightWaiters();
    expect(waiters.enter(2)).toBe(true);
    expect(waiters.enter(2)).toBe(true);
    expect(waiters.enter(2)).toBe(false);
    waiters.leave();
    expect(waiters.size).toBe(1);
    expect(waiters.enter(2)).toBe(true);
  });

  it('keeps a record running while another attempt on it still runs here', () => {
    const waiters = new InFlightWaiters();
    waiters.begin('r1');
    waiters.begin('r1');
    waiters.end('r1');
    expect(waiters.runningHere('r1')).toBe(true);
    waiters.end('r1');
    expect(waiters.runningHere('r1')).toBe(false);
  });
});
