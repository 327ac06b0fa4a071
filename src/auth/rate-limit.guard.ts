import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../common/domain-error.js';
import { securityConfig, type SecurityConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RateLimiter } from './rate-limiter.js';
import { requestState } from './tenant.js';

export class RateLimitedError extends DomainError {
  readonly code = 'rate_limited';
  constructor(retryAfterSeconds: number, scope: string) {
    super(`Too many requests for this ${scope}; retry later.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * Runs after the API key guard: per tenant, and per (tenant, Idempotency-Key)
 * so one client hammering one key is slowed down without starving the
 * tenant's other keys or other tenants.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly perTenant: RateLimiter;
  private readonly perKey: RateLimiter;

  constructor(
    @Inject(securityConfig.KEY) config: SecurityConfig,
    private readonly metrics: MetricsService,
  ) {
    this.perTenant = new RateLimiter(config.rateLimitPerTenantPerMinute);
    this.perKey = new RateLimiter(config.rateLimitPerKeyPerMinute);
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const tenant = requestState(request).tenant;
    if (!tenant) return true;
    const key = request.headers['idempotency-key'];
    if (typeof key === 'string') this.check(this.perKey, `${tenant}\n${key}`, 'idempotency key');
    this.check(this.perTenant, tenant, 'tenant');
    return true;
  }

  private check(limiter: RateLimiter, bucket: string, scope: string): void {
    const wait = limiter.take(bucket);
    if (wait === 0) return;
    this.metrics.rateLimited.inc({ limit: scope === 'tenant' ? 'tenant' : 'key' });
    throw new RateLimitedError(wait, scope);
  }
}
