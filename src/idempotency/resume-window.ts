import { DomainError } from '../common/domain-error.js';

/**
 * Until when an attempt given back after `error` is left to its client's
 * retry (the reaper skips it), or null to let the reaper reconcile it as soon
 * as it can. Only a failure that told the client to retry the same key (a
 * DomainError with Retry-After: provider outage, 503) earns the window: that
 * retry will come, and resuming keeps the same order and charge key. Anything
 * else (a bug, a crash-like error) is the reaper's at once, as a dead worker's.
 */
export function resumableUntil(error: unknown, now: Date, windowMs: number): Date | null {
  if (windowMs <= 0) return null;
  if (!(error instanceof DomainError) || error.retryAfterSeconds === undefined) return null;
  return new Date(now.getTime() + windowMs);
}
