import 'reflect-metadata';
import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** The optional Redis fast path in front of the idempotency records. */
export class RedisEnvironment {
  // Unset: the fast path is off and every look-up asks MongoDB. Redis is never the store of record.
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  // Prefix of every Redis key of this deployment; deployments sharing one Redis must differ here.
  @IsOptional()
  @Matches(/^[A-Za-z0-9_:.-]{1,64}$/, { message: 'must be 1-64 letters, digits, _ : . or -' })
  REDIS_NAMESPACE?: string;

  // Bound on one Redis call; past it the request asks MongoDB instead.
  @IsInt()
  @Min(1)
  @Max(5000)
  REDIS_COMMAND_TIMEOUT_MS: number = 25;

  // Share of failed Redis calls (in a rolling 10 s window) that opens the circuit.
  @IsInt()
  @Min(1)
  @Max(100)
  REDIS_BREAKER_ERROR_PERCENT: number = 50;

  // Calls in the window before the circuit may open at all.
  @IsInt()
  @Min(1)
  @Max(10000)
  REDIS_BREAKER_VOLUME_THRESHOLD: number = 10;

  // How long an open circuit skips Redis before one trial call (half-open).
  @IsInt()
  @Min(100)
  @Max(600000)
  REDIS_BREAKER_RESET_MS: number = 5000;
}

/** The optional Redis fast path in front of the idempotency records (never their store of record). */
export interface RedisSettings {
  /** Unset: the fast path is off and every look-up goes to MongoDB. */
  url?: string;
  /** Prefix of every key (REDIS_NAMESPACE; default `idem:{MONGODB_DB_NAME}`). */
  namespace: string;
  commandTimeoutMs: number;
  breakerErrorPercent: number;
  breakerVolumeThreshold: number;
  breakerResetMs: number;
}

/** `dbName`: MONGODB_DB_NAME, the default namespace's suffix (two deployments on one Redis differ by database). */
export function redisSettings(env: RedisEnvironment, dbName: string, deployment: Deployment, problems: string[]): RedisSettings {
  if (deployment.production && env.REDIS_URL && !redisHasAuth(env.REDIS_URL)) {
    problems.push('REDIS_URL: needs a password (redis://user:password@host) when NODE_ENV=production: Redis must be private');
  }
  return {
    url: env.REDIS_URL,
    namespace: env.REDIS_NAMESPACE ?? `idem:${dbName}`,
    commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS,
    breakerErrorPercent: env.REDIS_BREAKER_ERROR_PERCENT,
    breakerVolumeThreshold: env.REDIS_BREAKER_VOLUME_THRESHOLD,
    breakerResetMs: env.REDIS_BREAKER_RESET_MS,
  };
}

/** Whether a Redis URL carries credentials (AUTH / ACL user); an unparsable URL is left to the client to refuse. */
function redisHasAuth(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}
