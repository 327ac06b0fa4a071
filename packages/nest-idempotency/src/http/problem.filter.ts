import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import type { IdempotentHttpResponse } from './platform.js';
import { IdempotencyError } from '../errors.js';
import { problem, PROBLEM_CONTENT_TYPE, retryAfterHeader, type Problem } from '../problem.js';
import { isStoreUnavailable } from '../store/mongo-errors.js';

/** The answer to an error of the protocol (refusal or store fault), or null for anything else. */
export function idempotencyProblem(error: unknown): { problem: Problem; headers: Record<string, string> } | null {
  if (error instanceof IdempotencyError) {
    return {
      problem: problem(error.status, error.code, error.message, error.extensions),
      headers: { ...error.headers, ...retryAfterHeader(error.status, error.code, error.retryAfterSeconds) },
    };
  }
  if (isStoreUnavailable(error)) {
    return {
      problem: problem(503, 'store_unavailable', 'The idempotency store is unavailable; nothing was done. Retry with the same key.'),
      // The table's Retry-After for store_unavailable (2 s): long enough for a failover.
      headers: retryAfterHeader(503, 'store_unavailable'),
    };
  }
  return null;
}

/**
 * For an app without an exception filter of its own: the package's errors
 * as RFC 9457 problem+json with their guidance (retryable, reuseKey, newKeySafe) (400 missing key, 409 in flight + Retry-After,
 * 422 another body, 503 + Retry-After when MongoDB is unreachable);
 * anything else goes to Nest's default handling. An app with its own
 * filter calls idempotencyProblem() from it instead.
 */
@Catch()
export class IdempotencyProblemFilter extends BaseExceptionFilter {
  override catch(error: unknown, host: ArgumentsHost): void {
    const answer = idempotencyProblem(error);
    if (!answer || host.getType() !== 'http') return super.catch(error, host);
    const reply = host.switchToHttp().getResponse<IdempotentHttpResponse>();
    reply.status(answer.problem.status);
    reply.header('content-type', PROBLEM_CONTENT_TYPE);
    for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
    // A string, not an object: Express would serialize an object as application/json over our content type.
    reply.send(JSON.stringify(answer.problem));
  }
}
