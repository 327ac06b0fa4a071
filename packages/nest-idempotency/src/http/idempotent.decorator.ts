import { SetMetadata, UseInterceptors, applyDecorators, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { IdempotentHttpRequest } from './platform.js';
import type { ClientSession } from 'mongoose';
import { IdempotencyKeyInterceptor, keyedState, type IdempotencyKeyContext } from './idempotency.interceptor.js';
import { IDEMPOTENCY_PHASES_METADATA, IDEMPOTENT_ROUTE_METADATA, type IdempotentOptions } from './route-metadata.js';
import { markEntry } from './handler-entry.js';

export { IDEMPOTENT_ROUTE_METADATA, type IdempotentOptions };

/**
 * Declares a keyed operation: requires and validates `Idempotency-Key`
 * before the handler runs, and answers a retry of an answered request from
 * its record before validation. Alone on a handler (simple mode), it also
 * runs the handler in the transaction that completes the record and stores
 * what it returns (`@IdempotencySession()`); with `@IdempotencyKey()` the
 * handler drives the protocol itself (the phases API). Documentation is `ApiIdempotent()` from
 * `@idempotent-orders/nest-idempotency/openapi`. In simple mode a request
 * refused before the handler is entered (a pipe's 400) gives its claim back
 * and leaves no record: the corrected body may use the same key.
 */
export function Idempotent(options: IdempotentOptions) {
  if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(options.operation)) throw new Error(`Invalid operation name ${options.operation}`);
  // markEntry first: the metadata below is then written on the handler Nest will call.
  return applyDecorators(markEntry(), SetMetadata(IDEMPOTENT_ROUTE_METADATA, options), UseInterceptors(IdempotencyKeyInterceptor));
}

const keyParameter = createParamDecorator((_: unknown, context: ExecutionContext): IdempotencyKeyContext => {
  const key = keyedState(context.switchToHttp().getRequest<IdempotentHttpRequest>()).idempotency;
  if (!key) throw new Error('@IdempotencyKey() used on a route without @Idempotent()');
  return key;
});

/**
 * The key context the @Idempotent interceptor validated for this request.
 * Taking it makes the handler a phases-API handler: it calls
 * `IdempotencyService.requestFor` + `execute` itself and sends the result
 * with `@Res()` (`sendIdempotentResult`).
 */
export function IdempotencyKey(): ParameterDecorator {
  return (target, property, index) => {
    if (property !== undefined)
      Reflect.defineMetadata(IDEMPOTENCY_PHASES_METADATA, true, (target as Record<string | symbol, object>)[property]);
    keyParameter()(target, property, index);
  };
}

/**
 * Simple mode: the session of the one transaction that runs this handler and
 * completes the key's record. Pass it to every read and write
 * (`{ session }`): they commit with the record or not at all. The handler
 * may run more than once (a transient retry, a retry after a crash), so it
 * writes nothing outside the database.
 */
export const IdempotencySession = createParamDecorator((_: unknown, context: ExecutionContext): ClientSession => {
  const session = keyedState(context.switchToHttp().getRequest<IdempotentHttpRequest>()).idempotencySession;
  if (!session) throw new Error('@IdempotencySession() used outside a simple-mode @Idempotent() handler (one without @IdempotencyKey())');
  return session;
});
