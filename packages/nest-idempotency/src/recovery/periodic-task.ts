/**
 * A pass that every instance runs on an interval (the reaper; in the app
 * also the outbox relay and the erasure cache sweep): never two at once in
 * one process - a call while one runs gets the running one - and on
 * shutdown the timer stops and the running pass is awaited. Other instances
 * are kept out by each pass's own compare-and-set, not here. The timer is
 * unref'd: it never keeps a process alive.
 */
export class PeriodicTask<T> {
  private running: Promise<T> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly pass: () => Promise<T>) {}

  start(intervalMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  runOnce(): Promise<T> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }
}
