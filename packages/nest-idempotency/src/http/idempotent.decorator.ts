import { SetMetadata, UseInterceptors, applyDecorators, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { IdempotentHttpRequest } from './platform.js';
import type { ClientSession } from 'mongoose';
import {
  IDEMPOTENCY_PHASES_METADATA,
  IDEMPOTENT_ROUTE_METADATA,
  IdempotencyKeyInterceptor,
  keyedState,
  type IdempotencyKeyContext,
} from './idempotency.interceptor.js';
import type { StoreDownPolicy } from '../store/mongo-errors.js';

export { IDEMPOTENT_ROUTE_METADATA };

export interface IdempotentOptions {
  /** Stable operation name, part of the scope key (e.g. `orders.create`): lowercase, digits, `_ . -`. */
  operation: string;
  /** Retention of this route's keys; the module's `ttlSeconds` when absent. */
  ttlSeconds?: number;
  /** Bump when the response body changes shape: new keys are stored under it; keys already used keep their record. */
  schemaVersion?: number;
  /**
   * When MongoDB, the store of record, is unreachable: 'closed' (default)
   * answers 503 + Retry-After and runs nothing - the only choice for anything
   * that moves money; 'open' runs the work's `withoutGuard` instead, for a
   * route whose own writes are naturally idempotent (a PUT of a whole value).
   */
  onStoreDown?: StoreDownPolicy;
  /**
   * Opt in to the duplicate guard (off unless the module's `duplicateGuard`
   * is set, and then only for the tenants it names): the same body under
   * another key within the window is answered 409 `possible_duplicate`,
   * unless the request carries `Idempotency-Intent: new`. For creates whose
   * clients may mint a new key per retry.
   */
  duplicateGuard?: boolean;
}

/**
 * Declares a keyed operation: requires and validates `Idempotency-Key`
 * before the handler runs, and answers a retry of an answered request from
 * its record before validation. Alone on a handler (simple mode), it also
 * runs the handler in the transaction that completes the record and stores
 * what it returns (`@IdempotencySession()`); with `@IdempotencyKey()` the
 * handler drives the protocol itself (the phases API). Documentation is `ApiIdempotent()` from
 * `@idempotent-orders/nest-idempotency/openapi`.
 */
export function Idempotent(options: IdempotentOptions) {
  if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(options.operation)) throw new Error(`Invalid operation name ${options.operation}`);
  return applyDecorators(SetMetadata(IDEMPOTENT_ROUTE_METADATA, options), UseInterceptors(IdempotencyKeyInterceptor));
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
