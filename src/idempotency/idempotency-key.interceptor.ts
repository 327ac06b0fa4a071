import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { IDEMPOTENT_OPTIONS, type IdempotentOptions } from './idempotent.decorator.js';
import { idempotencyKeyHeader, parseIdempotencyKey } from './idempotency-key.js';
import type { StoreDownPolicy } from './store-down-policy.js';

/** What a keyed handler receives: the validated client key and the route's declaration. */
export interface IdempotencyKeyContext {
  clientKey: string;
  operation: string;
  ttlSeconds?: number;
  schemaVersion: number;
  onStoreDown?: StoreDownPolicy;
  method: string;
  route: string;
}

/** Kept on the raw Node request, where the request logger reads the operation. */
export interface KeyedRequestState {
  idempotency?: IdempotencyKeyContext;
}

export function keyedState(request: FastifyRequest): KeyedRequestState {
  return request.raw as KeyedRequestState;
}

/**
 * Runs after authentication and before validation pipes: a missing or
 * malformed key is refused (400) before the body is even looked at.
 */
@Injectable()
export class IdempotencyKeyInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const options = this.reflector.get<IdempotentOptions>(IDEMPOTENT_OPTIONS, context.getHandler());
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    keyedState(request).idempotency = {
      clientKey: parseIdempotencyKey(idempotencyKeyHeader(request.raw)),
      operation: options.operation,
      ttlSeconds: options.ttlSeconds,
      schemaVersion: options.schemaVersion ?? 1,
      onStoreDown: options.onStoreDown ?? 'closed',
      method: request.method,
      route: request.routeOptions.url ?? request.url,
    };
    return next.handle();
  }
}
