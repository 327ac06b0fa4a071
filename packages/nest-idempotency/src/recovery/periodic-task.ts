import { Logger } from '@nestjs/common';

/**
 * A pass that every instance runs on an interval (the reaper; in the app
 * also the outbox relay and the erasure cache sweep): never two at once in
 * one process - a call while one runs gets the running one - and on
 * shutdown the timer stops and the running pass is awaited. Other instances
 * are kept out by each pass's own compare-and-set, not here. The timer is
 * unref'd: it never keeps a process alive. A pass that rejects on the
 * timer is logged here (error level, with its stack) and the next tick runs
 * again: left unobserved it was an unhandled rejection, which kills a Node
 * process - a frozen store made every pass without a catch of its own do
 * exactly that (issue 37 item 0). A caller of runOnce() still gets the rejection.
 */
export class PeriodicTask<T> {
  private running: Promise<T> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pass: () => Promise<T>,
    private readonly name = 'PeriodicTask',
  ) {}

  start(intervalMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.runOnce().catch((error: unknown) => {
        new Logger(this.name).error(
          { msg: 'scheduled pass failed; the next one runs at its interval', error: String(error) },
          (error as Error)?.stack,
        );
      });
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined); // already logged by the timer, or seen by its caller
  }

  runOnce(): Promise<T> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }
}
