/**
 * One holder at a time, granted in arrival order. The holder is named by a
 * string (a transaction's session and number, or one write), so every command
 * of the holding transaction passes while everybody else queues.
 */
export class FifoLock {
  private current: string | undefined;
  private readonly queue: { owner: string; grant: (held: boolean) => void }[] = [];

  get holder(): string | undefined {
    return this.current;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves true when `owner` holds the lock (at once if it already does),
   * false if it was released while it waited (it left the queue).
   */
  acquire(owner: string): Promise<boolean> {
    if (this.current === undefined || this.current === owner) {
      this.current = owner;
      return Promise.resolve(true);
    }
    return new Promise((grant) => this.queue.push({ owner, grant }));
  }

  /** Gives the lock up if `owner` holds it, or takes it out of the queue; the next waiter gets it. */
  release(owner: string): void {
    const queued = this.queue.findIndex((waiter) => waiter.owner === owner);
    if (queued >= 0) this.queue.splice(queued, 1)[0].grant(false);
    if (this.current !== owner) return;
    const next = this.queue.shift();
    this.current = next?.owner;
    next?.grant(true);
  }
}
