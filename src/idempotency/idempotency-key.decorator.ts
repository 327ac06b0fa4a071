import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { keyedState, type IdempotencyKeyContext } from './idempotency-key.interceptor.js';

/** The key context the @Idempotent interceptor validated for this request. */
export const IdempotencyKey = createParamDecorator((_: unknown, context: ExecutionContext): IdempotencyKeyContext => {
  const key = keyedState(context.switchToHttp().getRequest<FastifyRequest>()).idempotency;
  if (!key) throw new Error('@IdempotencyKey() used on a route without @Idempotent()');
  return key;
});
