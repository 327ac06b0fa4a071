import { setTimeout } from 'node:timers/promises';

/**
 * Resolves after `ms`, or at once when `signal` aborts (it never rejects): a loop that is stopped does not wait
 * out its pause.
 */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return setTimeout(ms, undefined, { signal }).catch(() => undefined);
}
