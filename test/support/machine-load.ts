import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How many times slower than an idle machine this one runs right now (>= 1), measured from the machine
 * itself (issue 33 item 6): the run queue per core (the 1-minute load average over the cores) and how late
 * short timers fire here. A wall-time bound of a test is "what the code promises" times this factor, so a
 * loaded 2-core machine (load 15: factor ~7.5) stretches the bound instead of failing it, while a defect
 * that never cuts, never exits or waits for a default of minutes still fails it.
 */
export async function slowdown(): Promise<number> {
  const perCore = loadavg()[0] / availableParallelism();
  const TIMER_MS = 20;
  let worstLate = 0;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await sleep(TIMER_MS);
    worstLate = Math.max(worstLate, performance.now() - started - TIMER_MS);
  }
  return Math.max(1, perCore, 1 + worstLate / TIMER_MS);
}

/** `ms` on an idle machine, stretched by the current slowdown (rounded up to whole milliseconds). */
export function scaled(ms: number, factor: number): number {
  return Math.ceil(ms * factor);
}
