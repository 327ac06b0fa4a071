// How the process that runs each test file fared while it ran: the longest event-loop delay, the longest GC
// pause, and the heap once its tests are done. A stall of seconds reaches every timer in a test (the app's
// request timeouts, the emulator proxy's idle timer when it shares the process), so CI's timing failures are
// read against it. One JSON line per file goes to TEST_HEALTH_FILE (set by global-setup.mjs); the summary
// reporter prints the worst of each. Imported before each test file, in the process (worker) that runs it.
import { afterAll, beforeAll, expect } from '@jest/globals';
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.TEST_HEALTH_FILE;
if (file) {
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  let longestGcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longestGcMs = Math.max(longestGcMs, entry.duration);
  });
  beforeAll(() => {
    loopDelay.enable();
    gc.observe({ entryTypes: ['gc'] });
  });
  afterAll(() => {
    loopDelay.disable();
    gc.disconnect();
    const path = expect.getState().testPath ?? '';
    const line = {
      path: path.slice(process.cwd().length + 1),
      pid: process.pid,
      maxDelayMs: Math.round(loopDelay.max / 1e6),
      longestGcMs: Math.round(longestGcMs),
      heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  });
}
