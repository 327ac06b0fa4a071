import 'reflect-metadata';
import { IsInt, IsString, Max, Min } from 'class-validator';
import type { RecordKeys } from './keys.config.js';

/** How long keys live, how a duplicate in flight waits, and the duplicate guard on POST /v1/orders. */
export class IdempotencyEnvironment {
  @IsInt()
  @Min(1)
  @Max(31536000)
  IDEMPOTENCY_TTL_SECONDS: number = 86400;

  @IsInt()
  @Min(1000)
  @Max(3600000)
  IDEMPOTENCY_LOCK_TIMEOUT_MS: number = 30000;

  // A duplicate in flight waits this long for the answer (never past the holder's lease), then 409.
  @IsInt()
  @Min(0)
  @Max(60000)
  IDEMPOTENCY_IN_FLIGHT_WAIT_MS: number = 5000;

  // Waiting duplicates per instance (memory, sockets); past it a duplicate gets 409 at once.
  @IsInt()
  @Min(0)
  @Max(100000)
  IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS: number = 1000;

  // After a transient failure (503) the attempt is left to its client's retry this long before the reaper abandons it.
  @IsInt()
  @Min(0)
  @Max(86400000)
  IDEMPOTENCY_RESUME_WINDOW_MS: number = 300000;

  // The duplicate guard on POST /v1/orders (same body under a new key within the window: 409 possible_duplicate). 0 = off.
  @IsInt()
  @Min(0)
  @Max(86400)
  DUPLICATE_GUARD_WINDOW_SECONDS: number = 0;

  // Tenants the duplicate guard applies to: `*` (every tenant) or a comma-separated list.
  @IsString()
  DUPLICATE_GUARD_TENANTS: string = '*';

  // Up to ten years: a tombstone is a few hundred bytes, and a late retry can come from a very old outbox.
  @IsInt()
  @Min(1)
  @Max(315360000)
  IDEMPOTENCY_TOMBSTONE_SECONDS: number = 2592000;
}

export interface IdempotencySettings extends RecordKeys {
  ttlSeconds: number;
  lockTimeoutMs: number;
  inFlightWaitMs: number;
  /** How long a finished key's tombstone outlives its stored response (late retries). */
  tombstoneSeconds: number;
  inFlightMaxWaiters: number;
  /** How long a record released after a transient failure is left to its client before the reaper takes it. */
  resumeWindowMs: number;
  /** The duplicate guard: null when off (DUPLICATE_GUARD_WINDOW_SECONDS=0, the default). */
  duplicateGuard: { windowSeconds: number; tenants: '*' | string[] } | null;
}

export function idempotencySettings(env: IdempotencyEnvironment, keys: RecordKeys, problems: string[]): IdempotencySettings {
  return {
    ttlSeconds: env.IDEMPOTENCY_TTL_SECONDS,
    lockTimeoutMs: env.IDEMPOTENCY_LOCK_TIMEOUT_MS,
    inFlightWaitMs: env.IDEMPOTENCY_IN_FLIGHT_WAIT_MS,
    tombstoneSeconds: env.IDEMPOTENCY_TOMBSTONE_SECONDS,
    inFlightMaxWaiters: env.IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS,
    resumeWindowMs: env.IDEMPOTENCY_RESUME_WINDOW_MS,
    ...keys,
    duplicateGuard: duplicateGuardConfig(env.DUPLICATE_GUARD_WINDOW_SECONDS, env.DUPLICATE_GUARD_TENANTS, problems),
  };
}

/** DUPLICATE_GUARD_WINDOW_SECONDS (0 = off) and DUPLICATE_GUARD_TENANTS (`*` or tenant,tenant). */
function duplicateGuardConfig(
  windowSeconds: number,
  tenants: string,
  problems: string[],
): { windowSeconds: number; tenants: '*' | string[] } | null {
  const list = tenants.trim() === '*' ? '*' : tenants.split(',').map((tenant) => tenant.trim());
  if (list !== '*' && list.some((tenant) => !/^[A-Za-z0-9_-]{1,64}$/.test(tenant)))
    problems.push('DUPLICATE_GUARD_TENANTS: `*` or a comma-separated list of tenants (1-64 letters, digits, _ or -)');
  return windowSeconds > 0 ? { windowSeconds, tenants: list } : null;
}
