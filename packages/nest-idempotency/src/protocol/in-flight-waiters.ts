import { Injectable } from '@nestjs/common';
import { nextPollDelayMs } from './timing.js';

/** How a wait ended: the probe's answer, or no answer before the deadline (or no place to wait). */
export type WaitOutcome<T> = { answered: true; value: T } | { answered: false };

/**
 * Duplicates waiting on a key in flight, in this instance. An attempt driven
 * here announces its end (notify), so its waiters wake at once and re-read
 * once, instead of each polling the store: 64 clients on one hot key cost a
 * handful of reads, not a thousand a second. Work running in another
 * instance cannot announce itself here; those waiters poll with backoff.
 * Reads of one record by concurrent waiters are shared (one store read for
 * all of them), and the number of waiters is bounded: past it a duplicate is
 * answered 409 at once rather than holding memory and a socket.
 */
@Injectable()
export class InFlightWaiters {
  private readonly running = new Map<string, number>();
  private readonly sleepers = new Map<string, Set<() => void>>();
  private readonly reads = new Map<string, Promise<unknown>>();
  private waiting = 0;

  /** An attempt on recordId starts being driven in this instance. */
  begin(recordId: string): void {
    this.running.set(recordId, (this.running.get(recordId) ?? 0) + 1);
  }

  /** It ended (finished, failed, released or lost): wake its waiters; a read begun before is no longer current. */
  end(recordId: string): void {
    const left = (this.running.get(recordId) ?? 1) - 1;
    if (left > 0) this.running.set(recordId, left);
    else this.running.delete(recordId);
    this.reads.delete(recordId);
    const sleepers = this.sleepers.get(recordId);
    this.sleepers.delete(recordId);
    for (const wake of sleepers ?? []) wake();
  }

  /** Whether the attempt on recordId is being driven here (so its end will be announced). */
  runningHere(recordId: string): boolean {
    return this.running.has(recordId);
  }

  /** Takes a waiter's place; false when `max` already wait (answer 409 at once). */
  enter(max: number): boolean {
    if (this.waiting >= max) return false;
    this.waiting++;
    return true;
  }

  leave(): void {
    this.waiting = Math.max(0, this.waiting - 1);
  }

  get size(): number {
    return this.waiting;
  }

  /** Resolves when the attempt on recordId ends here, or after ms: whichever comes first. */
  sleep(recordId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.sleepers.get(recordId);
      if (!set) this.sleepers.set(recordId, (set = new Set()));
      const wake = (): void => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.sleepers.get(recordId) === set) this.sleepers.delete(recordId);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      set.add(wake);
    });
  }

  /**
   * The one wait loop of a duplicate on a key in flight (MongoDB's record or
   * the fast path's marker): until `deadline` (Date.now() ms), sleep - until
   * the attempt ends when it runs here, else with backoff 50 ms -> 500 ms -
   * then ask `probe`, which answers (a value) or says "still in flight"
   * (undefined). Takes a waiter's place for the whole wait; with no place
   * left, or no time, it does not wait at all.
   */
  async waitUntil<T>(recordId: string, deadline: number, maxWaiters: number, probe: () => Promise<T | undefined>): Promise<WaitOutcome<T>> {
    if (deadline <= Date.now() || !this.enter(maxWaiters)) return { answered: false };
    try {
      let delay: number | null = null;
      while (Date.now() < deadline) {
        const local = this.runningHere(recordId);
        if (!local) delay = nextPollDelayMs(delay);
        const left = deadline - Date.now();
        await this.sleep(recordId, local || delay === null ? left : Math.min(delay, left));
        const value = await probe();
        if (value !== undefined) return { answered: true, value };
      }
      return { answered: false };
    } finally {
      this.leave();
    }
  }

  /** One store read of recordId for every waiter that asks while it runs. */
  read<T>(recordId: string, load: () => Promise<T>): Promise<T> {
    const current = this.reads.get(recordId) as Promise<T> | undefined;
    if (current) return current;
    const started = load().finally(() => {
      if (this.reads.get(recordId) === started) this.reads.delete(recordId);
    });
    this.reads.set(recordId, started);
    return started;
  }
}
