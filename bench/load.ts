import { createRequire } from 'node:module';
import type { ScenarioResult } from './report.js';

/**
 * A typed door to autocannon (programmatic API; the package ships no types).
 * One call = one measured run; the caller does its own warm-up run first.
 */

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export type ResponseHeaders = Record<string, string | string[]>;

export interface RequestSpec {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Called before every request; the request returned is the one sent. */
  setupRequest?: (request: RawRequest, context: Record<string, unknown>) => RawRequest;
  onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: ResponseHeaders) => void;
}

interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  timeout?: number;
  requests: RequestSpec[];
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
  latency: { p50: number; p99: number };
  requests: { total: number };
}

const require = createRequire(import.meta.url);
const autocannon = require('autocannon') as (options: AutocannonOptions) => Promise<AutocannonResult>;

export interface LoadOptions {
  baseUrl: string;
  connections: number;
  durationSeconds: number;
  requests: RequestSpec[];
}

/** What one load run measures: a scenario's row without its naming and its check. */
export type LoadMeasurement = Omit<ScenarioResult, 'id' | 'title' | 'concurrency' | 'check' | 'cpuMsPerRequest'>;

export async function runLoad(options: LoadOptions): Promise<LoadMeasurement> {
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    timeout: 30,
    requests: options.requests,
  });
  const statusCounts = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, stats]) => [status, stats.count]));
  return {
    durationSeconds: result.duration,
    requests: result.requests.total,
    reqPerSec: result.duration > 0 ? result.requests.total / result.duration : 0,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    statusCounts,
  };
}

export function header(headers: ResponseHeaders, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}
