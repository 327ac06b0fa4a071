import { AsyncResource } from 'node:async_hooks';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** One tracked key: the hits of its current fixed window and of the window before. Fixed size, whatever the limit. */
export interface WindowCounter {
  /** Start of the current window, ms. */
  windowStart: number;
  previous: number;
  current: number;
}

/**
 * A sliding-window counter for @nestjs/throttler (its `ThrottlerStorage`
 * port): the estimate of hits in the last `ttl` is the current window's
 * count plus the previous window's, weighted by how much of it still
 * overlaps the sliding window. It replaces the package's default storage,
 * which keeps one expiry per hit: O(limit) time and memory per request, and
 * `Math.min(...hits)` throws a RangeError (a 500 instead of a 429) above
 * ~120k hits in a window (security review finding #13). Here a request costs
 * O(1) and a key costs one small object at any limit.
 *
 * Semantics kept from the old configuration (blockDuration 0): a refused
 * request is not counted, and a key is allowed again as soon as the estimate
 * drops below the limit. Windows start at a key's first hit, so a key's first
 * window counts exactly. The estimate assumes the previous window's hits were
 * spread evenly: it may admit a little more than `limit` in the worst 60 s,
 * never twice the limit as a plain fixed window can at its edge.
 *
 * Memory: a key is dropped once both its windows are over (swept once a
 * window), so an entry lives at most three windows after its last hit.
 */
export class SlidingWindowCounterStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly counters = new Map<string, WindowCounter>();
  private sweepTimer?: NodeJS.Timeout;
  private windowMs = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The tracked keys (read by tests and diagnostics). */
  get storage(): ReadonlyMap<string, WindowCounter> {
    return this.counters;
  }

  increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = this.now();
    this.ensureSweep(ttl);
    let counter = this.counters.get(key);
    if (!counter) {
      counter = { windowStart: now, previous: 0, current: 0 };
      this.counters.set(key, counter);
    } else {
      roll(counter, now, ttl);
    }
    const elapsed = now - counter.windowStart;
    const estimate = counter.previous * (1 - elapsed / ttl) + counter.current;
    const timeToExpire = Math.max(1, Math.ceil((ttl - elapsed) / 1000));
    if (estimate < limit) {
      counter.current++;
      return Promise.resolve({ totalHits: Math.ceil(estimate) + 1, timeToExpire, isBlocked: false, timeToBlockExpire: 0 });
    }
    return Promise.resolve({
      totalHits: Math.ceil(estimate) + 1,
      timeToExpire,
      isBlocked: true,
      // At most a window: the 1 ms past an edge that msUntilAllowed adds must not read as a 61st second.
      timeToBlockExpire: Math.min(Math.ceil(ttl / 1000), Math.max(1, Math.ceil(msUntilAllowed(counter, elapsed, ttl, limit) / 1000))),
    });
  }

  /** Drops keys whose windows are both over; runs once a window, and tests call it with a later `now`. */
  evictIdleRecords(now = this.now()): void {
    for (const [key, counter] of this.counters) {
      if (now - counter.windowStart >= 2 * this.windowMs) this.counters.delete(key);
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.counters.clear();
  }

  private ensureSweep(ttl: number): void {
    this.windowMs = Math.max(this.windowMs, ttl);
    if (this.sweepTimer) return;
    // Bound to no request: the interval must not keep the first request's async context alive.
    const start = AsyncResource.bind(() => {
      this.sweepTimer = setInterval(() => this.evictIdleRecords(), this.windowMs);
      this.sweepTimer.unref();
    });
    start();
  }
}

/** Moves the counter's window forward to the one that holds `now`. */
function roll(counter: WindowCounter, now: number, ttl: number): void {
  const windows = Math.floor((now - counter.windowStart) / ttl);
  if (windows <= 0) return;
  counter.previous = windows === 1 ? counter.current : 0;
  counter.current = 0;
  counter.windowStart += windows * ttl;
}

/** How long until previous x (1 - elapsed/ttl) + current < limit again (strictly: 1 ms past the point of equality). */
function msUntilAllowed(counter: WindowCounter, elapsed: number, ttl: number, limit: number): number {
  // The current window alone is full: the next window, where it becomes the (decaying) previous one.
  if (counter.current >= limit || counter.previous === 0) return ttl - elapsed + 1;
  const allowedAt = ttl * (1 - (limit - counter.current) / counter.previous);
  return Math.max(1, allowedAt - elapsed + 1);
}
