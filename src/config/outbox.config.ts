import 'reflect-metadata';
import { IsInt, Max, Min } from 'class-validator';

/** The outbox relay that publishes committed events. */
export class OutboxEnvironment {
  @IsInt()
  @Min(50)
  @Max(3600000)
  OUTBOX_RELAY_INTERVAL_MS: number = 1000;

  @IsInt()
  @Min(1)
  @Max(1000)
  OUTBOX_BATCH_SIZE: number = 100;

  @IsInt()
  @Min(100)
  @Max(600000)
  OUTBOX_PUBLISH_TIMEOUT_MS: number = 10000;
}

export interface OutboxSettings {
  intervalMs: number;
  batchSize: number;
  /** A publish still running after this has failed (it is retried); a claimed event is held for twice as long. */
  publishTimeoutMs: number;
}

export function outboxSettings(env: OutboxEnvironment): OutboxSettings {
  return { intervalMs: env.OUTBOX_RELAY_INTERVAL_MS, batchSize: env.OUTBOX_BATCH_SIZE, publishTimeoutMs: env.OUTBOX_PUBLISH_TIMEOUT_MS };
}
