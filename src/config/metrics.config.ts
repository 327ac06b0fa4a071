import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { shown, type Deployment } from './environment.js';

/** Where Prometheus scrapes /metrics, and what guards it. */
export class MetricsEnvironment {
  // /metrics on a listener of its own (never the API port). Default: 9464 wherever there is a real store.
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(65535)
  METRICS_PORT?: number;

  // Address of the metrics listener; default HOST's.
  @IsOptional()
  @IsString()
  METRICS_HOST?: string;

  // Bearer token for /metrics (on the API port when METRICS_PORT is unset, else on the metrics listener).
  @IsOptional()
  @IsString()
  METRICS_TOKEN?: string;
}

/**
 * Where /metrics is served: `api` on the API port (public only with the
 * embedded store or in tests, else behind `token`), or `port` on a listener
 * of its own (the default wherever there is a real store).
 */
export interface MetricsSettings {
  listener: 'api' | 'port';
  port?: number;
  host: string;
  token?: string;
}

/** The scrape port Prometheus exporters conventionally use for the metrics listener. */
export const DEFAULT_METRICS_PORT = 9464;

/**
 * Metrics are public on the API port only where dev defaults are (a laptop, a test); elsewhere a port of their own or a token.
 * `api`: the API listener (PORT and the host it binds), which a listener of its own must not share and defaults its host to.
 */
export function metricsSettings(
  env: MetricsEnvironment,
  deployment: Deployment,
  api: { port: number; host: string },
  problems: string[],
): MetricsSettings {
  if (env.METRICS_TOKEN !== undefined && env.METRICS_TOKEN.length < 32) {
    problems.push(`METRICS_TOKEN: must be at least 32 characters (got ${shown('METRICS_TOKEN', env.METRICS_TOKEN)})`);
  }
  const separate = env.METRICS_PORT !== undefined || (deployment.realStore !== undefined && env.METRICS_TOKEN === undefined);
  if (separate && env.METRICS_PORT === api.port) problems.push('METRICS_PORT: must differ from PORT');
  return separate
    ? {
        listener: 'port',
        port: env.METRICS_PORT ?? DEFAULT_METRICS_PORT,
        // Loopback unless said otherwise (a container names its scraper's network): never every interface by default (SEC4-07).
        host: env.METRICS_HOST ?? (deployment.realStore === undefined ? api.host : '127.0.0.1'),
        token: env.METRICS_TOKEN,
      }
    : { listener: 'api', host: api.host, token: env.METRICS_TOKEN };
}
