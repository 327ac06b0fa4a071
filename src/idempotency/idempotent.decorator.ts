import { SetMetadata, UseInterceptors, applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiResponse } from '@nestjs/swagger';
import { IdempotencyKeyInterceptor } from './idempotency-key.interceptor.js';
import type { StoreDownPolicy } from './store-down-policy.js';

export interface IdempotentOptions {
  /** Stable operation name, part of the scope key (e.g. `orders.create`). */
  operation: string;
  /** Retention of this route's keys; IDEMPOTENCY_TTL_SECONDS when absent. */
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
}

export const IDEMPOTENT_OPTIONS = 'idempotency:options';

const problemSchema = { $ref: '#/components/schemas/Problem' };

/**
 * Declares a keyed operation: requires and validates `Idempotency-Key`
 * before the handler runs, and documents the contract in OpenAPI.
 */
export function Idempotent(options: IdempotentOptions) {
  if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(options.operation)) throw new Error(`Invalid operation name ${options.operation}`);
  return applyDecorators(
    SetMetadata(IDEMPOTENT_OPTIONS, options),
    UseInterceptors(IdempotencyKeyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: true,
      description:
        'Client-chosen key (1-255 printable ASCII, a UUID is ideal), scoped to your API key and this operation. ' +
        'A retry with the same key and body gets the original status and body back with `Idempotent-Replayed: true`.',
    }),
    ApiResponse({
      status: 400,
      description: '`idempotency_key_missing` or `idempotency_key_invalid`, or a validation error',
      content: { 'application/problem+json': { schema: problemSchema } },
    }),
    ApiResponse({
      status: 409,
      description:
        '`idempotency_key_in_use`: a request with this key is still in flight; retry after `Retry-After` seconds. ' +
        '`idempotency_key_expired`: this key and body were answered before and the stored response is past retention; ' +
        'the request is not repeated, `Location` names what the first one created (use a new key to repeat it)',
      headers: {
        'Retry-After': {
          description: 'With `idempotency_key_in_use`: seconds until the in-flight lease expires',
          schema: { type: 'integer' },
        },
        Location: {
          description: 'With `idempotency_key_expired`: the resource the original request created, when it created one',
          schema: { type: 'string' },
        },
      },
      content: { 'application/problem+json': { schema: problemSchema } },
    }),
    ApiResponse({
      status: 422,
      description: '`idempotency_key_reused`: this key was used with a different body',
      content: { 'application/problem+json': { schema: problemSchema } },
    }),
  );
}
