import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { IdempotencyErasure, PeriodicTask } from '@idempotent-orders/nest-idempotency';
import { outboxConfig, type OutboxConfig } from '../config/config.tokens.js';
import { ErasureRepository } from './erasure.repository.js';
import { ErasureService } from './erasure.service.js';

/** An erasure this young may still be telling Redis in its own request. */
const GRACE_MS = 10_000;
const BATCH = 50;

/**
 * Finishes the Redis side of erasures that committed but could not tell
 * Redis (it was down, full, or the process died in between): on every
 * instance, at the outbox relay's interval, as the outbox retries its
 * events. Telling Redis twice is harmless. Off without the fast path.
 */
@Injectable()
export class ErasureCacheSweep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ErasureCacheSweep.name);
  private readonly task: PeriodicTask<number>;

  constructor(
    private readonly erasures: ErasureRepository,
    private readonly erasureService: ErasureService,
    private readonly idempotency: IdempotencyErasure,
    private readonly clock: Clock,
    @Inject(outboxConfig.KEY) private readonly config: OutboxConfig,
  ) {
    this.task = new PeriodicTask(() => this.finishDue(GRACE_MS));
  }

  onApplicationBootstrap(): void {
    if (this.idempotency.cacheEnabled) this.task.start(this.config.intervalMs);
  }

  onApplicationShutdown(): Promise<void> {
    return this.task.stop();
  }

  /** One pass; returns how many erasures it finished. Never two passes at once in one process. */
  runOnce(): Promise<number> {
    return this.task.runOnce();
  }

  /** Finishes the due erasures at least `graceMs` old; returns how many. */
  async finishDue(graceMs: number): Promise<number> {
    let done = 0;
    try {
      const due = await this.erasures.findCacheDue(new Date(this.clock.now().getTime() - graceMs), BATCH);
      for (const erasure of due) {
        if (!(await this.erasureService.invalidate(erasure))) break; // Redis still cannot be told: next pass.
        done++;
      }
    } catch (error) {
      this.logger.warn(`Erasure cache sweep failed: ${(error as Error).message}`);
    }
    return done;
  }
}
