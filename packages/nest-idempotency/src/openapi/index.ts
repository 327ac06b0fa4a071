import { applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiResponse } from '@nestjs/swagger';

/** Options of ApiIdempotent(). */
export interface ApiIdempotentOptions {
  /** The schema of your problem+json bodies. Default: `{ $ref: '#/components/schemas/Problem' }`. */
  problemSchema?: Record<string, unknown>;
  /** The route declares `@Idempotent({ duplicateGuard: true })`: documents `Idempotency-Intent` and 409 `possible_duplicate`. */
  duplicateGuard?: boolean;
}

/**
 * Documents a route declared `@Idempotent()` in OpenAPI: the
 * `Idempotency-Key` header and the protocol's 400, 409 and 422 answers.
 * Behaviour is `@Idempotent()`'s; this adds documentation only (needs
 * `@nestjs/swagger`, an optional peer).
 */
export function ApiIdempotent(options: ApiIdempotentOptions = {}) {
  const problemSchema = options.problemSchema ?? { $ref: '#/components/schemas/Problem' };
  const guard = options.duplicateGuard === true;
  return applyDecorators(
    ...(guard
      ? [
          ApiHeader({
            name: 'Idempotency-Intent',
            required: false,
            description:
              '`new`: this request means a second one with the same body as a request sent under another key moments ago ' +
              '(skips the duplicate guard, when it is on for your account). Any other value: 400 `idempotency_intent_invalid`.',
            schema: { type: 'string', enum: ['new'] },
          }),
        ]
      : []),
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
        'the request is not repeated, `Location` names what the first one created (use a new key to repeat it). ' +
        '`idempotency_key_canceled`: the key was canceled (its effect undone, or it never ran); nothing runs under it again, ' +
        'whatever the body; `Location` names what it had created, when it had' +
        (guard
          ? '. `possible_duplicate` (duplicate guard, when on for your account): the same body was sent under another key ' +
            'within the window; `Location` names its result, or `Retry-After` while it is still in flight; ' +
            'send `Idempotency-Intent: new` to mean a second one'
          : ''),
      headers: {
        'Retry-After': {
          description: 'With `idempotency_key_in_use`: seconds until the in-flight lease expires',
          schema: { type: 'integer' },
        },
        Location: {
          description:
            'With `idempotency_key_expired` or `idempotency_key_canceled`: the resource the original request created, when it created one',
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
