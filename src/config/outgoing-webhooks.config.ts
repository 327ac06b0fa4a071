import 'reflect-metadata';
import { IsBoolean, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** Svix's schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (eight attempts in about 28 hours). */
export const DEFAULT_RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const FIVE_DAYS_MS = 5 * 24 * 3600 * 1000;

/** Outgoing webhooks: the merchants' endpoints the dispatcher POSTs every event to. */
export class OutgoingWebhooksEnvironment {
  // Lets endpoints resolve to loopback, private, link-local or multicast addresses (never in production unless set).
  @IsOptional()
  @IsBoolean()
  OUTGOING_WEBHOOKS_ALLOW_PRIVATE?: boolean;

  // Delays before each attempt, milliseconds, comma separated; the first is the first attempt's.
  @IsOptional()
  @IsString()
  OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS?: string;

  @IsInt()
  @Min(10)
  @Max(120000)
  OUTGOING_WEBHOOKS_TIMEOUT_MS: number = 10000;

  // An endpoint whose every attempt failed for this long is disabled.
  @IsInt()
  @Min(1000)
  @Max(90 * 24 * 3600 * 1000)
  OUTGOING_WEBHOOKS_DISABLE_AFTER_MS: number = FIVE_DAYS_MS;

  @IsInt()
  @Min(10)
  @Max(3600000)
  OUTGOING_WEBHOOKS_POLL_INTERVAL_MS: number = 1000;

  @IsInt()
  @Min(1)
  @Max(64)
  OUTGOING_WEBHOOKS_PER_ENDPOINT_CONCURRENCY: number = 2;

  @IsInt()
  @Min(1)
  @Max(1000)
  OUTGOING_WEBHOOKS_MAX_CONCURRENCY: number = 32;

  // Endpoints one tenant may register: each event fans out to all of them, so this bounds one tenant's share of
  // the dispatcher's work and of its store (Stripe's own limit is 16). At most 100, which the list route shows whole.
  @IsInt()
  @Min(1)
  @Max(100)
  OUTGOING_WEBHOOKS_MAX_ENDPOINTS_PER_TENANT: number = 16;

  // How long a delivery is kept after it ended (succeeded or failed), in days; a pending one is kept until it ends.
  @IsInt()
  @Min(1)
  @Max(400)
  OUTGOING_WEBHOOKS_RETENTION_DAYS: number = 30;
}

export interface OutgoingWebhooksSettings {
  allowPrivate: boolean;
  /** Endpoints must be https (production). */
  requireHttps: boolean;
  retryScheduleMs: number[];
  timeoutMs: number;
  /** At most this much of an answer is read; the rest is cut. */
  maxResponseBytes: number;
  disableAfterMs: number;
  pollIntervalMs: number;
  perEndpointConcurrency: number;
  maxConcurrency: number;
  /** Endpoints one tenant may have; a create past it is refused (409 webhook_endpoint_limit) and its key stays free. */
  maxEndpointsPerTenant: number;
  /** An ended delivery is removed this long after its last attempt (the deliveries API and a manual retry then answer 404). */
  retentionMs: number;
}

export function outgoingWebhooksSettings(
  env: OutgoingWebhooksEnvironment,
  deployment: Deployment,
  problems: string[],
): OutgoingWebhooksSettings {
  return {
    allowPrivate: env.OUTGOING_WEBHOOKS_ALLOW_PRIVATE ?? !deployment.production,
    requireHttps: deployment.production,
    retryScheduleMs: parseSchedule(env.OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS, problems),
    timeoutMs: env.OUTGOING_WEBHOOKS_TIMEOUT_MS,
    maxResponseBytes: 64 * 1024,
    disableAfterMs: env.OUTGOING_WEBHOOKS_DISABLE_AFTER_MS,
    pollIntervalMs: env.OUTGOING_WEBHOOKS_POLL_INTERVAL_MS,
    perEndpointConcurrency: env.OUTGOING_WEBHOOKS_PER_ENDPOINT_CONCURRENCY,
    maxConcurrency: env.OUTGOING_WEBHOOKS_MAX_CONCURRENCY,
    maxEndpointsPerTenant: env.OUTGOING_WEBHOOKS_MAX_ENDPOINTS_PER_TENANT,
    retentionMs: env.OUTGOING_WEBHOOKS_RETENTION_DAYS * 24 * 3600 * 1000,
  };
}

function parseSchedule(raw: string | undefined, problems: string[]): number[] {
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE_MS;
  const delays = raw.split(',').map((part) => Number(part.trim()));
  if (
    delays.length < 1 ||
    delays.length > 20 ||
    delays.some((delay) => !Number.isSafeInteger(delay) || delay < 0 || delay > 7 * 24 * 3600 * 1000)
  ) {
    problems.push(
      `OUTGOING_WEBHOOKS_RETRY_SCHEDULE_MS: 1 to 20 delays in milliseconds, comma separated, each up to 7 days (got ${JSON.stringify(raw)})`,
    );
    return DEFAULT_RETRY_SCHEDULE_MS;
  }
  return delays;
}
