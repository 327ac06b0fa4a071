import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EMPTY, type Observable } from 'rxjs';
import { requestState } from '../auth/tenant.js';
import { IDEMPOTENT_OPTIONS, type IdempotentOptions } from './idempotent.decorator.js';
import { idempotencyKeyHeader, parseIdempotencyKey } from './idempotency-key.js';
import { IdempotencyService } from './idempotency.service.js';
import { sendIdempotentResult } from './idempotent-reply.js';
import type { PrefetchedOwner } from './idempotent-work.js';
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
  /** Set by the interceptor: the key's record, read once before validation (IdempotencyService.lookUpEarly). */
  prefetched?: PrefetchedOwner;
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
 * malformed key is refused (400) before the body is even looked at. Then the
 * key's record is read, once: a retry of an answered request gets its stored
 * answer here, without validating the body again or reaching the handler
 * (IdempotencyService.lookUpEarly); any other request goes on to validation
 * and the handler, carrying the record read.
 */
@Injectable()
export class IdempotencyKeyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly idempotency: IdempotencyService,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const options = this.reflector.get<IdempotentOptions>(IDEMPOTENT_OPTIONS, context.getHandler());
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const key: IdempotencyKeyContext = {
      clientKey: parseIdempotencyKey(idempotencyKeyHeader(request.raw)),
      operation: options.operation,
      ttlSeconds: options.ttlSeconds,
      schemaVersion: options.schemaVersion ?? 1,
      onStoreDown: options.onStoreDown ?? 'closed',
      method: request.method,
      route: request.routeOptions.url ?? request.url,
    };
    keyedState(request).idempotency = key;
    const tenant = requestState(request).tenant;
    if (!tenant) throw new Error('@Idempotent() used on a route without authentication');
    const early = await this.idempotency.lookUpEarly(key, tenant, request.body);
    if (early.replay) {
      sendIdempotentResult(http.getResponse<FastifyReply>(), early.replay);
      return EMPTY;
    }
    key.prefetched = early.owner;
    return next.handle();
  }
}
