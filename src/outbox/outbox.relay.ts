import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { PeriodicTask } from '@idempotent-orders/nest-idempotency';
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

export class PublishTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`publish did not finish within ${timeoutMs} ms`);
    this.name = 'PublishTimeoutError';
  }
}

/** The publish, or a PublishTimeoutError after `timeoutMs` (the publish itself may still land: delivery is at least once). */
export async function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PublishTimeoutError(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Publishes pending events at least once, on every instance. Each event is
 * claimed before it is published (findOneAndUpdate moving availableAt), so N
 * relays publish each event once, not N times; a double publish remains
 * possible only when a publish outlives its timeout (consumers deduplicate
 * on the event id). A lost one is not possible.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private readonly task: PeriodicTask<number>;

  constructor(
    private readonly events: OutboxEventRepository,
    private readonly publisher: EventPublisher,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    @Inject(outboxConfig.KEY) private readonly config: OutboxConfig,
  ) {
    this.task = new PeriodicTask(() => this.publishDue());
  }

  onApplicationBootstrap(): void {
    this.task.start(this.config.intervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  /** One pass; returns how many events were published. Never two passes at once in one process. */
  tick(): Promise<number> {
    return this.task.runOnce();
  }

  private async publishDue(): Promise<number> {
    let published = 0;
    try {
      for (let claimed = 0; claimed < this.config.batchSize; claimed++) {
        const now = this.clock.now();
        // Held for twice the publish timeout: a relay that dies mid-publish gives the event back then.
        const event = await this.events.claimNext(now, new Date(now.getTime() + 2 * this.config.publishTimeoutMs));
        if (!event) break;
        if (await this.publishOne(event)) published++;
      }
      this.metrics.outboxBacklog.set(await this.events.countPending());
    } catch (error) {
      this.logger.warn(`Outbox relay pass failed: ${(error as Error).message}`);
    }
    return published;
  }

  private async publishOne(claimed: OutboxEvent): Promise<boolean> {
    try {
      await withTimeout(this.publisher.publish(toPublishedEvent(claimed)), this.config.publishTimeoutMs);
    } catch (error) {
      this.metrics.outboxPublishFailures.inc({ type: claimed.type });
      // attempts already counts this one (the claim incremented it): the first failure waits ~1 s.
      const retryAt = new Date(this.clock.now().getTime() + backoffMs(claimed.attempts - 1));
      await this.events.markFailed(claimed, retryAt, (error as Error).message ?? String(error));
      return false;
    }
    this.metrics.outboxPublished.inc({ type: claimed.type });
    return this.events.markPublished(claimed, this.clock.now());
  }
}
