import { Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyScope } from '../config/configuration.js';
import { ApiKeyRegistry } from './api-key.registry.js';
import { InsufficientScopeError, UnauthorizedError } from './auth.errors.js';
import { IS_PUBLIC } from './public.decorator.js';
import { REQUIRED_SCOPE } from './scopes.js';
import { requestState } from './tenant.js';

/**
 * Global guard: resolves the tenant before anything else runs, so an
 * unauthenticated caller never reaches the idempotency store (no oracle),
 * then checks the key's scope (401 before 403: a stranger learns nothing
 * about scopes). Calls that need more than `orders` (erasure, key admin) are
 * written to the audit log with the key id and request id.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly audit = new Logger('Audit');

  constructor(
    private readonly reflector: Reflector,
    private readonly registry: ApiKeyRegistry,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const identity = this.registry.authenticateRequest(request.raw);
    if (!identity) throw new UnauthorizedError();
    const state = requestState(request);
    state.tenant = identity.tenant;
    state.apiKeyId = identity.keyId;
    const scope = this.reflector.getAllAndOverride<ApiKeyScope | undefined>(REQUIRED_SCOPE, targets) ?? 'orders';
    const allowed = identity.scopes.includes(scope);
    if (scope !== 'orders') {
      this.audit.log({
        msg: allowed ? 'privileged call' : 'privileged call refused',
        scope,
        allowed,
        tenant: identity.tenant,
        keyId: identity.keyId,
        requestId: request.id,
        method: request.method,
        route: request.routeOptions.url,
      });
    }
    if (!allowed) throw new InsufficientScopeError(scope);
    return true;
  }
}
