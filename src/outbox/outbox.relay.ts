import { Inject, Injectable, Logger, Optional, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '../common/clock.js';
import { FaultInjector } from '../common/fault-injector.js';
import { PeriodicTask } from '@idempotent-orders/nest-idempotency';
import { outboxConfig, type OutboxConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { EventPublisher, toPublishedEvent } from './event-publisher.port.js';
import type { OutboxEvent } from './outbox-event.js';
import { OutboxEventRepository, type PublishOutcome } from './outbox-event.repository.js';

/** The longest wait between two tries of one event; the broker's duplicate window is derived from it (jetstream-stream.ts). */
export const MAX_BACKOFF_MS = 5 * 60_000;

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
 * Publishes pending events at least once, on every instance, a batch at a
 * time: one claim (a few round trips whatever the batch), every publish of
 * the batch in flight together, one bulk write to mark them. A claimed event
 * is held (availableAt moved) so N relays publish it once, not N times; it is
 * published again only when a publish outlives its timeout or the relay dies
 * between the broker's ack and the mark, and the broker drops that repeat by
 * `Nats-Msg-Id` (consumers still deduplicate on the event id). Only the oldest
 * pending event of an aggregate is claimed, so per-aggregate order holds
 * through failures and racing relays. A lost event is not possible.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private readonly task: PeriodicTask<number>;
  private stopping = false;

  constructor(
    private readonly events: OutboxEventRepository,
    private readonly publisher: EventPublisher,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
    @Inject(outboxConfig.KEY) private readonly config: OutboxConfig,
    // Optional: a relay built by hand (a second instance in a test) has none.
    @Optional() private readonly faults?: FaultInjector,
  ) {
    this.task = new PeriodicTask(() => this.publishDue());
  }

  onApplicationBootstrap(): void {
    this.task.start(this.config.intervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    return this.task.stop();
  }

  /** One pass (batches until the due events run out); returns how many events were published. Never two passes at once in one process. */
  tick(): Promise<number> {
    return this.task.runOnce();
  }

  private async publishDue(): Promise<number> {
    let published = 0;
    try {
      for (;;) {
        const { found, ok } = await this.publishBatch();
        published += ok;
        /*
         * A short window: every due event was in it, nothing more is due now. A full one: drain on, unless the
         * service is stopping, even when it claimed few or none (its later events waiting for their aggregate
         * were moved out of the way, so the next window holds others).
         */
        if (found < this.config.batchSize || this.stopping) break;
      }
      const stats = await this.events.pendingStats();
      this.metrics.outboxBacklog.set(stats.count);
      const oldest = stats.oldestCreatedAt ? (this.clock.now().getTime() - stats.oldestCreatedAt.getTime()) / 1000 : 0;
      this.metrics.outboxOldestPendingAge.set(Math.max(0, oldest));
    } catch (error) {
      this.logger.warn(`Outbox relay pass failed: ${(error as Error).message}`);
    }
    return published;
  }

  private async publishBatch(): Promise<{ found: number; ok: number }> {
    const now = this.clock.now();
    const claim = randomUUID();
    // Held for twice the publish timeout: a relay that dies mid-batch gives the events back then.
    const { found, events: batch } = await this.events.claimBatch(
      now,
      new Date(now.getTime() + 2 * this.config.publishTimeoutMs),
      this.config.batchSize,
      claim,
    );
    const outcomes = await Promise.all(batch.map((event) => this.publishOne(event)));
    if (outcomes.some((outcome) => outcome.published)) this.faults?.crashIf('after-event-publish');
    await this.events.markBatch(outcomes, claim, this.clock.now());
    return { found, ok: outcomes.filter((outcome) => outcome.published).length };
  }

  private async publishOne(event: OutboxEvent): Promise<PublishOutcome> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      await withTimeout(this.publisher.publish(toPublishedEvent(event)), this.config.publishTimeoutMs);
    } catch (error) {
      this.metrics.outboxPublishDuration.observe({ outcome: 'failed' }, seconds());
      this.metrics.outboxPublishFailures.inc({ type: event.type });
      // attempts already counts this one (the claim incremented it): the first failure waits ~1 s.
      const retryAt = new Date(this.clock.now().getTime() + backoffMs(event.attempts - 1));
      return { event, published: false, retryAt, error: (error as Error).message ?? String(error) };
    }
    this.metrics.outboxPublishDuration.observe({ outcome: 'published' }, seconds());
    this.metrics.outboxPublished.inc({ type: event.type });
    return { event, published: true };
  }
}
