/**
 * Refused requests (4xx) are what anyone can trigger for free - 200,000
 * refusals used to write 200,000 warn lines. At most `perSecond` of them are
 * logged each second; the others are only counted, and the next refusal that
 * is logged says how many were skipped before it. Metrics
 * (http_requests_total) still count every request: they are the exact record.
 */
export class RefusalLogSampler {
  private windowStartedAt = Number.NEGATIVE_INFINITY;
  private loggedInWindow = 0;
  private skipped = 0;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether this refusal is written; when it is, `skippedBefore` says how many were not since the last one. */
  admit(): { log: boolean; skippedBefore: number } {
    const now = this.now();
    if (now - this.windowStartedAt >= 1000) {
      this.windowStartedAt = now;
      this.loggedInWindow = 0;
    }
    if (this.loggedInWindow >= this.perSecond) {
      this.skipped++;
      return { log: false, skippedBefore: 0 };
    }
    this.loggedInWindow++;
    const skippedBefore = this.skipped;
    this.skipped = 0;
    return { log: true, skippedBefore };
  }
}
