import 'reflect-metadata';
import { isIP } from 'node:net';
import { IsInt, IsString, Max, Min } from 'class-validator';
import { shown } from './environment.js';

/** The API's HTTP limits: body size, the waits of a slow client, JSON shape, and whose forwarded headers count. */
export class HttpEnvironment {
  @IsInt()
  @Min(1024)
  @Max(10 * 1024 * 1024)
  HTTP_BODY_LIMIT_BYTES: number = 102400;

  @IsInt()
  @Min(100)
  @Max(120000)
  HTTP_HEADERS_TIMEOUT_MS: number = 5000;

  @IsInt()
  @Min(100)
  @Max(120000)
  HTTP_REQUEST_TIMEOUT_MS: number = 8000;

  @IsInt()
  @Min(100)
  @Max(600000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5000;

  @IsInt()
  @Min(2)
  @Max(64)
  HTTP_JSON_MAX_DEPTH: number = 8;

  // Which peers may set X-Forwarded-*: false (none), the balancers' addresses/CIDRs, or true (anyone: only behind a balancer that overwrites them).
  @IsString()
  TRUST_PROXY: string = 'false';

  @IsInt()
  @Min(10)
  @Max(1000000)
  HTTP_JSON_MAX_VALUES: number = 1000;
}

/** What one client may cost the HTTP layer before it is cut off or refused. */
export interface HttpSettings {
  bodyLimitBytes: number;
  /** Whole header block, counted from the first byte (or the connection) - 408 after. */
  headersTimeoutMs: number;
  /** Headers and body, i.e. everything the client sends - 408 after; never the handler's time. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** JSON bodies: nesting depth and number of values, checked before parsing and validation. */
  jsonMaxDepth: number;
  jsonMaxValues: number;
  /** Fastify's trustProxy: whose X-Forwarded-For/-Proto/-Host are believed (request.ip, protocol, host). */
  trustProxy: boolean | string;
}

function trustProxy(value: string): boolean | string {
  return value === 'false' || value === 'true' ? value === 'true' : value;
}

function isAddressOrCidr(entry: string): boolean {
  const [address, prefix, extra] = entry.trim().split('/');
  const family = isIP(address);
  return (
    family > 0 && extra === undefined && (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)))
  );
}

export function httpSettings(env: HttpEnvironment, problems: string[]): HttpSettings {
  const proxies = env.TRUST_PROXY === 'false' || env.TRUST_PROXY === 'true' ? [] : env.TRUST_PROXY.split(',');
  if (proxies.some((entry) => !isAddressOrCidr(entry))) {
    problems.push(
      `TRUST_PROXY: must be false, true, or comma-separated addresses/CIDRs of the balancers (got ${shown('TRUST_PROXY', env.TRUST_PROXY)})`,
    );
  }
  if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  return {
    bodyLimitBytes: env.HTTP_BODY_LIMIT_BYTES,
    headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    jsonMaxDepth: env.HTTP_JSON_MAX_DEPTH,
    jsonMaxValues: env.HTTP_JSON_MAX_VALUES,
    trustProxy: trustProxy(env.TRUST_PROXY),
  };
}
