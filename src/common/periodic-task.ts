import type { SchedulerRegistry } from '@nestjs/schedule';

/**
 * A pass that every instance runs on an interval (the reaper, the outbox
 * relay, the erasure cache sweep): never two at once in one process - a call
 * while one runs gets the running one - and on shutdown the timer stops and
 * the running pass is awaited. Other instances are kept out by each pass's
 * own compare-and-set, not here.
 */
export class PeriodicTask<T> {
  private running: Promise<T> | null = null;

  constructor(
    private readonly scheduler: SchedulerRegistry,
    private readonly name: string,
    private readonly pass: () => Promise<T>,
  ) {}

  start(intervalMs: number): void {
    const timer = setInterval(() => void this.runOnce(), intervalMs);
    timer.unref();
    this.scheduler.addInterval(this.name, timer);
  }

  async stop(): Promise<void> {
    if (this.scheduler.doesExist('interval', this.name)) this.scheduler.deleteInterval(this.name);
    await this.running;
  }

  runOnce(): Promise<T> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }
}
