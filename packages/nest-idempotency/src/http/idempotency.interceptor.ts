import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { EMPTY, type Observable } from 'rxjs';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import type { IdempotentOptions } from './idempotent.decorator.js';
import { idempotencyKeyHeader, parseIdempotencyKey } from './key-header.js';
import { IdempotencyService, type IdempotentResult } from '../protocol/idempotency.service.js';
import type { IdempotencyKeyContext } from '../protocol/work.js';
import { duplicateIntent } from '../protocol/duplicate-guard.js';
import { nodeRequest, routeParams, routeTemplate, type IdempotentHttpRequest, type IdempotentHttpResponse } from './platform.js';

/** Reflector metadata key of a route's IdempotentOptions (read it to treat keyed routes apart, e.g. in a rate limiter). */
export const IDEMPOTENT_ROUTE_METADATA = 'idempotency:options';

export type { IdempotencyKeyContext };

/** Kept on the raw Node request, where the request logger reads the operation. */
export interface KeyedRequestState {
  idempotency?: IdempotencyKeyContext;
}

export function keyedState(request: IdempotentHttpRequest): KeyedRequestState {
  return nodeRequest(request) as KeyedRequestState;
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
    @Inject(IDEMPOTENCY_SETTINGS) private readonly settings: IdempotencySettings,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const options = this.reflector.get<IdempotentOptions>(IDEMPOTENT_ROUTE_METADATA, context.getHandler());
    const http = context.switchToHttp();
    const request = http.getRequest<IdempotentHttpRequest>();
    const key: IdempotencyKeyContext = {
      clientKey: parseIdempotencyKey(idempotencyKeyHeader(nodeRequest(request))),
      operation: options.operation,
      ttlSeconds: options.ttlSeconds,
      schemaVersion: options.schemaVersion ?? 1,
      onStoreDown: options.onStoreDown ?? 'closed',
      method: request.method,
      route: routeTemplate(request),
      params: routeParams(request),
      duplicateGuard: duplicateIntent(options.duplicateGuard, request.headers),
    };
    keyedState(request).idempotency = key;
    // The app's tenant resolver (options.tenant) runs after its auth guard: no tenant is a wiring mistake, never a client's.
    const tenant = this.settings.tenant(request);
    if (!tenant) throw new Error('@Idempotent() route without a tenant: the tenant option returned none (is the route authenticated?)');
    const early = await this.idempotency.lookUpEarly(key, tenant, request.body);
    if (early.replay) {
      sendIdempotentResult(http.getResponse<IdempotentHttpResponse>(), early.replay);
      return EMPTY;
    }
    key.prefetched = early.owner;
    return next.handle();
  }
}

/** Headers kept with a stored response and sent again on replay; nothing else is stored. */
export const REPLAYED_HEADERS = ['content-type', 'location'];

/**
 * Writes an idempotent result: the original status, headers and bytes, plus the key's metadata
 * (Idempotency-Expires; on a replay Idempotent-Replayed and Idempotent-Original-Date).
 */
export function sendIdempotentResult(reply: IdempotentHttpResponse, result: IdempotentResult): void {
  const { response } = result;
  reply.status(response.status);
  for (const name of REPLAYED_HEADERS) {
    if (response.headers[name]) reply.header(name, response.headers[name]);
  }
  if (result.replayed) {
    reply.header('idempotent-replayed', 'true');
    // When the original answer was stored: a replay of this morning's order is not mistaken for a new one.
    if (result.originalAt) reply.header('idempotent-original-date', result.originalAt.toUTCString());
  }
  reply.header('idempotency-expires', result.keyExpiresAt.toUTCString());
  reply.send(response.body);
}
