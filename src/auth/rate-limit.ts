import { createHash } from 'node:crypto';
import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerLimitDetail,
  type ThrottlerModuleOptions,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../common/domain-error.js';
import type { SecurityConfig } from '../config/config.tokens.js';
import { idempotencyKeyHeader, IDEMPOTENT_ROUTE_METADATA, parseIdempotencyKey } from '@idempotent-orders/nest-idempotency';
import { MetricsService } from '../metrics/metrics.service.js';
import { SlidingWindowCounterStorage } from './rate-limit.storage.js';
import { requestState } from './tenant.js';

/** The limits are "per minute": a sliding window of this length (approximated by two fixed windows, rate-limit.storage.ts). */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export class RateLimitedError extends DomainError {
  readonly code = 'rate_limited';
  constructor(retryAfterSeconds: number, scope: 'tenant' | 'idempotency key') {
    super(`Too many requests for this ${scope}; retry later.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

const tenantOf = (context: ExecutionContext) => requestState(context.switchToHttp().getRequest<FastifyRequest>()).tenant;

/** One declared limit: everything RateLimitGuard.canActivate reads, fixed at boot. */
interface DeclaredLimit {
  name: string;
  ttl: number;
  limit: number;
  blockDuration: number;
  skipIf: (context: ExecutionContext) => boolean;
  getTracker: (request: Record<string, unknown>, context: ExecutionContext) => string;
}

type RateLimitOptions = ThrottlerModuleOptions & {
  throttlers: DeclaredLimit[];
  generateKey: (context: ExecutionContext, tracker: string, name: string) => string;
};

/**
 * @nestjs/throttler with two named limits, checked in this order (same
 * window, and the guard keeps the declared order for equal windows):
 *  - `tenant`: every authenticated request of the tenant;
 *  - `key`: per (tenant, Idempotency-Key) on @Idempotent routes only, so one
 *    client hammering one key is slowed without starving its other keys.
 * A request the tenant limit refuses never reaches the key limit, and the key
 * is validated (400) before it is tracked, and tracked as a SHA-256 digest:
 * a record costs the same whatever the client sends. The storage is a
 * sliding-window counter: O(1) per request and one fixed-size record per
 * tracked tenant or key, at any configured limit. Only requests the tenant
 * limit admitted create key records, and a record goes at most three windows
 * after its last hit, so memory is at most about
 * tenants x (1 + 3 x RATE_LIMIT_PER_TENANT_PER_MINUTE) small records - which
 * is why a key limit needs a tenant limit (configuration.ts). Per instance on
 * purpose: it protects this process; a global quota (Redis storage) belongs
 * to the gateway or a later change.
 */
export function rateLimitOptions(config: SecurityConfig): RateLimitOptions {
  const perTenant = config.rateLimitPerTenantPerMinute;
  const perKey = config.rateLimitPerKeyPerMinute;
  return {
    storage: new SlidingWindowCounterStorage(),
    // Retry-After is set on the 429 itself; limits are not advertised on every response.
    setHeaders: false,
    // One bucket per tenant and per (tenant, key) across routes, not per route (the default).
    generateKey: (_context, tracker, name) => `${name}:${tracker}`,
    throttlers: [
      {
        name: 'tenant',
        ttl: RATE_LIMIT_WINDOW_MS,
        limit: perTenant,
        // Sliding window, no extra penalty: a refused request is not counted.
        blockDuration: 0,
        skipIf: (context) => perTenant === 0 || !tenantOf(context),
        getTracker: (_request: Record<string, unknown>, context: ExecutionContext) => tenantOf(context)!,
      },
      {
        name: 'key',
        ttl: RATE_LIMIT_WINDOW_MS,
        limit: perKey,
        blockDuration: 0,
        skipIf: (context) => perKey === 0 || !tenantOf(context) || !Reflect.getMetadata(IDEMPOTENT_ROUTE_METADATA, context.getHandler()),
        getTracker: (request: Record<string, unknown>, context: ExecutionContext) => {
          const key = parseIdempotencyKey(idempotencyKeyHeader((request as unknown as FastifyRequest).raw));
          return `${tenantOf(context)}:${createHash('sha256').update(key).digest('base64url')}`;
        },
      },
    ],
  };
}

/** Runs after the API key guard (it needs the tenant); refusals are 429 problem+json with Retry-After. */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly metrics: MetricsService,
  ) {
    super(options, storage, reflector);
    const declared = options as RateLimitOptions;
    this.limits = declared.throttlers;
    this.keyOf = declared.generateKey;
  }

  private readonly limits: DeclaredLimit[];
  private readonly keyOf: RateLimitOptions['generateKey'];

  /**
   * The package's canActivate, less what this service never uses: per route
   * it resolves five @Throttle/@SkipThrottle overrides per limit through the
   * reflector and awaits each value - twenty metadata reads and a dozen
   * awaits on every request, for decorators no route carries. The limits,
   * their order, skipIf, trackers, keys and storage are the ones
   * rateLimitOptions declares; as in the package, a refusal stops at the
   * first limit, so a request the tenant limit refuses is not counted for
   * its key. Hazard: a @Throttle or @SkipThrottle added to a route later is
   * not read here; a new limit or exemption goes into rateLimitOptions.
   */
  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Record<string, unknown>>();
    for (const limit of this.limits) {
      if (limit.skipIf(context)) continue;
      const tracker = limit.getTracker(request, context);
      const key = this.keyOf(context, tracker, limit.name);
      const record = await this.storageService.increment(key, limit.ttl, limit.limit, 0, limit.name);
      if (record.isBlocked) await this.throwThrottlingException(context, { ...record, limit: limit.limit, ttl: limit.ttl, key, tracker });
    }
    return true;
  }

  protected override throwThrottlingException(_context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const limit = detail.key.startsWith('key:') ? 'key' : 'tenant';
    this.metrics.rateLimited.inc({ limit });
    return Promise.reject(new RateLimitedError(Math.max(1, detail.timeToBlockExpire), limit === 'key' ? 'idempotency key' : 'tenant'));
  }
}
