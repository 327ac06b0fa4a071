// When to send again: exponential backoff with full jitter, capped, bounded by
// a number of attempts and an overall deadline, never sooner than Retry-After.

/** The retry policy as the caller gives it; every field has a default. */
export interface RetryPolicyOptions {
  /** Attempts in all, the first one included (default 8). */
  maxAttempts?: number;
  /** Backoff before the first retry is drawn from [0, baseDelayMs] (default 200 ms), doubling after each. */
  baseDelayMs?: number;
  /** Cap of the backoff (default 10 s). A longer Retry-After is still honoured, within the deadline. */
  maxDelayMs?: number;
  /** Overall bound from the first send: no retry is started (or waited for) past it (default 60 s). */
  deadlineMs?: number;
  /** Bound of one attempt, from sending to the last byte of the answer (default 10 s); aborted, it counts as no answer. */
  attemptTimeoutMs?: number;
  /** Milliseconds since any epoch (default Date.now). Injectable for tests. */
  now?: () => number;
  /** Waits `ms`, rejecting when `signal` aborts (default a timer). Injectable for tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform in [0, 1) (default Math.random). Injectable for tests. */
  random?: () => number;
}

/** A complete, checked retry policy (see {@link retryPolicy}). */
export type RetryPolicy = Readonly<Required<RetryPolicyOptions>>;

/** What to do after a retryable answer: wait this long and send again, or give up (and why). */
export type RetryPlan = { action: 'wait'; delayMs: number } | { action: 'give-up'; reason: 'max-attempts' | 'deadline' };

const DEFAULTS = {
  maxAttempts: 8,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  deadlineMs: 60_000,
  attemptTimeoutMs: 10_000,
} as const;

/** The defaults filled in and every bound checked (a RangeError names the bad one). */
export function retryPolicy(options: RetryPolicyOptions = {}): RetryPolicy {
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
    baseDelayMs: options.baseDelayMs ?? DEFAULTS.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULTS.maxDelayMs,
    deadlineMs: options.deadlineMs ?? DEFAULTS.deadlineMs,
    attemptTimeoutMs: options.attemptTimeoutMs ?? DEFAULTS.attemptTimeoutMs,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? sleep,
    random: options.random ?? Math.random,
  };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) throw new RangeError('maxAttempts must be an integer >= 1');
  for (const name of ['baseDelayMs', 'maxDelayMs', 'deadlineMs'] as const) {
    if (!Number.isFinite(policy[name]) || policy[name] < 0) throw new RangeError(`${name} must be a finite number >= 0`);
  }
  if (!Number.isFinite(policy.attemptTimeoutMs) || policy.attemptTimeoutMs <= 0) throw new RangeError('attemptTimeoutMs must be > 0');
  if (policy.maxDelayMs < policy.baseDelayMs) throw new RangeError('maxDelayMs must be >= baseDelayMs');
  return policy;
}

/**
 * Full jitter (uniform in [0, min(maxDelayMs, baseDelayMs * 2^(retry-1))]) before
 * retry number `retry` (1 = the first retry): spreads the retries of many
 * clients that failed together instead of sending them back in waves.
 */
export function backoffDelayMs(policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'random'>, retry: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(policy.random() * ceiling);
}

/**
 * After attempt `attempt` (1-based) got a retryable answer, `elapsedMs` after the
 * first send: the backoff, raised to `retryAfterMs` when the server sent one
 * (a floor, never shortened), or give up - when the attempts are spent, or
 * when the wait would end past the deadline (a Retry-After beyond it is not
 * worth waiting for: the caller hears now, with the last answer).
 */
export function planRetry(policy: RetryPolicy, attempt: number, elapsedMs: number, retryAfterMs?: number): RetryPlan {
  if (attempt >= policy.maxAttempts) return { action: 'give-up', reason: 'max-attempts' };
  const delayMs = Math.max(backoffDelayMs(policy, attempt), retryAfterMs ?? 0);
  if (elapsedMs + delayMs >= policy.deadlineMs) return { action: 'give-up', reason: 'deadline' };
  return { action: 'wait', delayMs };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
