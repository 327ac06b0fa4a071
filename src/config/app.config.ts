import 'reflect-metadata';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** Every FaultPoint (below), for FAULT_CRASH_AT's validation: a point the code has is a point the variable accepts. */
export const FAULT_POINTS = [
  'after-claim',
  'after-charge',
  'after-charged',
  'before-response',
  'after-refund-claim',
  'after-refund-provider',
  'after-capture-claim',
  'after-capture-provider',
  'after-void-claim',
  'after-void-provider',
  // The outbox relay: the broker acknowledged a batch, the mark is not written (issue 45).
  'after-event-publish',
] as const;

/**
 * Where FAULT_CRASH_AT may kill the process: after-claim / after-charge /
 * after-charged / before-response on a create; after-<op>-claim (the
 * operation's claim committed, the provider not called yet) and
 * after-<op>-provider (the provider acted, nothing recorded yet) on a
 * refund, capture or void.
 */
export type FaultPoint = (typeof FAULT_POINTS)[number];

/** The process: where it listens, how it logs and stops, what it is called, and the switches of tests and benchmarks. */
export class AppEnvironment {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: string = 'development';

  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  // Unset: every interface (0.0.0.0), or loopback only while the dev tenant is active.
  @IsOptional()
  @IsString()
  HOST?: string;

  // Swagger UI and the spec at /docs; default on, off in production.
  @IsOptional()
  @IsBoolean()
  DOCS_ENABLED?: boolean;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';

  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: string = 'auto';

  @IsInt()
  @Min(0)
  @Max(100000)
  LOG_REFUSED_REQUESTS_PER_SECOND: number = 10;

  @IsInt()
  @Min(0)
  @Max(120000)
  SHUTDOWN_GRACE_MS: number = 10000;

  @IsString()
  @Matches(/^[a-z][a-z0-9-]{0,62}$/, { message: 'must be a lowercase slug' })
  SERVICE_NAME: string = 'orders-service';

  @IsBoolean()
  FAULT_INJECTION: boolean = false;

  @IsOptional()
  @IsIn(FAULT_POINTS)
  FAULT_CRASH_AT?: string;

  @IsBoolean()
  BENCH_DISABLE_IDEMPOTENCY: boolean = false;
}

export interface AppSettings {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  logLevel: string;
  /** JSON lines for machines; coloured lines for a person at a terminal (auto: pretty on a TTY, never in production). */
  logFormat: 'json' | 'pretty';
  /** Refused (4xx) requests logged per second at most; the rest are counted, not written. */
  logRefusedPerSecond: number;
  shutdownGraceMs: number;
  serviceName: string;
  faultInjection: boolean;
  faultCrashAt?: FaultPoint;
  benchDisableIdempotency: boolean;
  /** Swagger UI and the OpenAPI document at /docs. */
  docsEnabled: boolean;
}

/** `auto`: pretty for a person at a terminal in development, JSON everywhere else (files, pipes, production). */
export function logFormat(setting: string, production: boolean, stdoutIsTty: boolean): 'json' | 'pretty' {
  if (setting === 'json' || setting === 'pretty') return setting;
  return stdoutIsTty && !production ? 'pretty' : 'json';
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** `usingDevApiKey`: the dev tenant is active (API_KEYS unset), so the API listens on loopback only. */
export function appSettings(env: AppEnvironment, deployment: Deployment, usingDevApiKey: boolean, problems: string[]): AppSettings {
  const { production, realStore } = deployment;
  if (realStore && env.FAULT_INJECTION) problems.push(`FAULT_INJECTION: refused when ${realStore}`);
  if (realStore && env.BENCH_DISABLE_IDEMPOTENCY) problems.push(`BENCH_DISABLE_IDEMPOTENCY: refused when ${realStore}`);
  if (env.FAULT_CRASH_AT && !env.FAULT_INJECTION) problems.push('FAULT_CRASH_AT: needs FAULT_INJECTION=true');
  const host = env.HOST ?? (usingDevApiKey ? '127.0.0.1' : '0.0.0.0');
  if (usingDevApiKey && !LOOPBACK.has(host)) {
    problems.push(
      'HOST: the dev tenant (API_KEYS unset) listens on loopback only (127.0.0.1, ::1, localhost); set API_KEYS to listen on HOST',
    );
  }
  return {
    env: env.NODE_ENV as AppSettings['env'],
    port: env.PORT,
    host,
    logLevel: env.LOG_LEVEL,
    logFormat: logFormat(env.LOG_FORMAT, production, process.stdout.isTTY === true),
    logRefusedPerSecond: env.LOG_REFUSED_REQUESTS_PER_SECOND,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    serviceName: env.SERVICE_NAME,
    faultInjection: env.FAULT_INJECTION,
    faultCrashAt: env.FAULT_CRASH_AT as FaultPoint | undefined,
    benchDisableIdempotency: env.BENCH_DISABLE_IDEMPOTENCY,
    // Off wherever the dev defaults are (a real store, whatever NODE_ENV says): the document maps every route (SEC4-07).
    docsEnabled: env.DOCS_ENABLED ?? realStore === undefined,
  };
}
