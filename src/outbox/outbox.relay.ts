import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Clock } from '../common/clock.js';
import { outboxConfig, type OutboxConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { EventPublisher, toPublishedEvent } from './event-publisher.port.js';
import type { OutboxEvent } from './outbox-event.js';
import { OutboxEventRepository } from './outbox-event.repository.js';

const MAX_BACKOFF_MS = 5 * 60_000;

/** Exponential backoff, 1 s, 2 s, 4 s ... capped at 5 minutes, each jittered to 50-100% of its step. */
export function backoffMs(attempts: number, random = Math.random()): number {
  return Math.round(Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempts) * (0.5 + random / 2));
}

/**
 * Publishes pending events at least once. Safe on every instance: a double
 * publish is possible (consumers deduplicate on the event id), a lost one is not.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private running: Promise<number> | null = null;

  constructor(
    private readonly events: OutboxEventRepository,
    private readonly publisher: EventPublisher,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    private readonly scheduler: SchedulerRegistry,
    @Inject(outboxConfig.KEY) private readonly config: OutboxConfig,
  ) {}

  onApplicationBootstrap(): void {
    const timer = setInterval(() => void this.tick(), this.config.intervalMs);
    timer.unref();
    this.scheduler.addInterval('outbox-relay', timer);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('interval', 'outbox-relay')) this.scheduler.deleteInterval('outbox-relay');
    await this.running;
  }

  /** One pass; returns how many events were published. Never two passes at once in one process. */
  async tick(): Promise<number> {
    if (this.running) return this.running;
    this.running = this.publishDue().finally(() => (this.running = null));
    return this.running;
  }

  private async publishDue(): Promise<number> {
    let published = 0;
    try {
      const due = await this.events.findDue(this.clock.now(), this.config.batchSize);
      for (const event of due) {
        if (await this.publishOne(event)) published++;
      }
      this.metrics.outboxBacklog.set(await this.events.countPending());
    } catch (error) {
      this.logger.warn(`Outbox relay pass failed: ${(error as Error).message}`);
    }
    return published;
  }

  private async publishOne(event: OutboxEvent): Promise<boolean> {
    try {
      await this.publisher.publish(toPublishedEvent(event));
    } catch (error) {
      this.metrics.outboxPublishFailures.inc({ type: event.type });
      const retryAt = new Date(this.clock.now().getTime() + backoffMs(event.attempts));
      await this.events.markFailed(event, retryAt, (error as Error).message ?? String(error));
      return false;
    }
    this.metrics.outboxPublished.inc({ type: event.type });
    return this.events.markPublished(event, this.clock.now());
  }
}
