import { describe, expect, it } from '@jest/globals';
import { PeriodicTask } from './periodic-task.js';

describe('PeriodicTask', () => {
  it('observes a pass that rejects on its timer (no unhandled rejection), and runs again at the next tick', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let passes = 0;
    const task = new PeriodicTask(async () => {
      passes++;
      throw new Error('store frozen');
    }, 'TestPass');
    try {
      task.start(10);
      // Until a second pass has run after the first one rejected (a fixed 120 ms failed on a busy runner), 5 s at most.
      for (let waited = 0; passes < 2 && waited < 5_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      await task.stop();
      // Unhandled rejections are reported after a macrotask turn.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(passes).toBeGreaterThanOrEqual(2);
    expect(unhandled).toEqual([]);
  });

  it('still hands the rejection to a caller of runOnce', async () => {
    const task = new PeriodicTask(() => Promise.reject(new Error('no')));
    await expect(task.runOnce()).rejects.toThrow('no');
  });
});
