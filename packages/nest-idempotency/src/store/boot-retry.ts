import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreUnavailable } from './mongo-errors.js';

/**
 * How long a boot step (a collection or an index build) is tried again while the store cannot answer it. A
 * process killed inside a transaction leaves it open on the server until `transactionLifetimeLimitSeconds`
 * (60 s by default), and an index build on a collection it wrote waits behind it, past the driver's socket
 * timeout: the restarted process waits that out rather than failing its boot.
 */
export const BOOT_RETRY_DEADLINE_MS = 90_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * Runs `step` again while it fails because the store is unavailable (unreachable, no primary, a timeout), with
 * a pause from 250 ms doubling to 5 s, until `deadlineMs` has passed; then, or on any other error (a conflicting
 * index, no rights), throws. `onRetry` hears each failure it retries (to log it). The step must be idempotent.
 */
export async function retryWhileStoreUnavailable<T>(
  step: () => Promise<T>,
  onRetry: (error: Error, delayMs: number) => void,
  deadlineMs = BOOT_RETRY_DEADLINE_MS,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    try {
      return await step();
    } catch (error) {
      if (!isStoreUnavailable(error) || Date.now() + delay > deadline) throw error;
      onRetry(error as Error, delay);
      await sleep(delay);
    }
  }
}
