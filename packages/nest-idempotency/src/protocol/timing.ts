/**
 * The Retry-After of a 409 `idempotency_key_in_use`: when the answer is
 * likely, not when the lease would run out. The lease (30 s by default) is a
 * crash bound; most attempts finish in well under a second, and the request
 * already waited `inFlight.waitMs` for it. A client honouring a
 * 30 s hint waits for nothing; one honouring 1 s asks again about when the
 * answer is there. Never past the lease (after that the retry takes over
 * anyway), and at least 1 s: Retry-After is in whole seconds.
 */
export const CONFLICT_RETRY_AFTER_SECONDS = 1;

export function conflictRetryAfterSeconds(
  leaseExpiresAt: Date | null,
  now: Date,
  hintSeconds: number = CONFLICT_RETRY_AFTER_SECONDS,
): number {
  const leaseSeconds = leaseExpiresAt ? Math.ceil((leaseExpiresAt.getTime() - now.getTime()) / 1000) : hintSeconds;
  return Math.max(1, Math.min(hintSeconds, leaseSeconds));
}

/**
 * How long a duplicate in flight may wait for the answer: the configured
 * wait, but never past the holder's lease - once it expires the duplicate
 * should take over and resume rather than keep waiting on a dead worker.
 */
export function inFlightWaitBudgetMs(configuredMs: number, leaseExpiresAt: Date | null, now: Date): number {
  if (!leaseExpiresAt) return 0;
  return Math.max(0, Math.min(configuredMs, leaseExpiresAt.getTime() - now.getTime()));
}

/** Backoff between reads of a record held by another instance: 50 ms doubling to 500 ms. */
export function nextPollDelayMs(previousMs: number | null, firstMs = 50, maxMs = 500): number {
  return previousMs === null ? firstMs : Math.min(maxMs, previousMs * 2);
}

/**
 * Whole seconds until the lease expires, at least 1: what the admin API's
 * refusal to release a live lease tells the operator (only expiry frees it).
 */
export function retryAfterSeconds(leaseExpiresAt: Date, now: Date): number {
  return Math.max(1, Math.ceil((leaseExpiresAt.getTime() - now.getTime()) / 1000));
}

/**
 * Until when an attempt given back after `error` is left to its client's
 * retry (the reaper skips it), or null to let the reaper reconcile it as soon
 * as it can. Only a failure that told the client to retry the same key (an
 * error carrying `retryAfterSeconds`: provider outage, 503) earns the window: that
 * retry will come, and resuming keeps the same order and charge key. Anything
 * else (a bug, a crash-like error) is the reaper's at once, as a dead worker's.
 */
export function resumableUntil(error: unknown, now: Date, windowMs: number): Date | null {
  if (windowMs <= 0) return null;
  if (typeof (error as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds !== 'number') return null;
  return new Date(now.getTime() + windowMs);
}
