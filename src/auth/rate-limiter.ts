/**
 * Token buckets kept in this process: `limitPerMinute` requests of burst,
 * refilled continuously. Per instance on purpose - it protects this process
 * from a hot key or a noisy tenant; a global quota belongs in the gateway.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limitPerMinute: number,
    private readonly maxBuckets = 100_000,
  ) {}

  /** Takes one token; returns 0 when allowed, else the seconds until one is free. 0 limit = unlimited. */
  take(bucket: string, now: number = Date.now()): number {
    if (this.limitPerMinute === 0) return 0;
    const perMs = this.limitPerMinute / 60_000;
    const state = this.buckets.get(bucket) ?? { tokens: this.limitPerMinute, at: now };
    state.tokens = Math.min(this.limitPerMinute, state.tokens + (now - state.at) * perMs);
    state.at = now;
    if (state.tokens < 1) {
      this.buckets.set(bucket, state);
      return Math.max(1, Math.ceil((1 - state.tokens) / perMs / 1000));
    }
    state.tokens -= 1;
    this.buckets.delete(bucket);
    this.buckets.set(bucket, state);
    if (this.buckets.size > this.maxBuckets) this.buckets.delete(this.buckets.keys().next().value!);
    return 0;
  }
}
