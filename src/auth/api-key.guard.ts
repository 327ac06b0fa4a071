import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { securityConfig, type SecurityConfig } from '../config/config.tokens.js';
import { ApiKeyRegistry, bearerSecret } from './api-key.registry.js';
import { UnauthorizedError } from './auth.errors.js';
import { IS_PUBLIC } from './public.decorator.js';
import type { FastifyRequest } from 'fastify';
import { requestState } from './tenant.js';

/**
 * Global guard: resolves the tenant before anything else runs, so an
 * unauthenticated caller never reaches the idempotency store (no oracle).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly registry: ApiKeyRegistry;

  constructor(
    private readonly reflector: Reflector,
    @Inject(securityConfig.KEY) config: SecurityConfig,
  ) {
    this.registry = new ApiKeyRegistry(config.apiKeys);
  }

  canActivate(context: ExecutionContext): boolean {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const secret = bearerSecret(request.headers.authorization);
    const tenant = secret === undefined ? undefined : this.registry.tenantFor(secret);
    if (!tenant) throw new UnauthorizedError();
    requestState(request).tenant = tenant;
    return true;
  }
}
