import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import {
  IdempotencyError,
  isStoreUnavailable,
  PROBLEM_CONTENT_TYPE,
  problem,
  retryAfterHeader,
  type Problem,
} from '@idempotent-orders/nest-idempotency';
import { DomainError } from './domain-error.js';
import { ERROR_STATUS } from './error-status.js';
import { RequestValidationError } from './validation.js';

export interface ProblemResponse {
  problem: Problem;
  headers: Record<string, string>;
}

/** Fastify's own refusals (exported for the test that every code has guidance). */
export const FASTIFY_ERRORS: Record<string, [number, string, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large', 'The request body is larger than the limit.'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type', 'Send the body as application/json.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'invalid_content_length', 'Content-Length does not match the body.'],
};

/** Nest's HttpExceptions without a code of their own (any other status is `http_<status>`, guided by its status). */
export const HTTP_EXCEPTION_CODES: Record<number, string> = {
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

const FIXED_DETAILS: Record<number, string> = {
  404: 'No route matches this method and path.',
  405: 'This method is not allowed on this path.',
};

/**
 * Turns anything thrown into RFC 9457 problem+json, with the guidance of its
 * code (retryable, reuseKey, newKeySafe: APP_PROBLEMS and the package's table). Never leaks a stack, a
 * driver message or a secret: unknown errors become a bare 500 and are logged.
 */
export function toProblemResponse(error: unknown, logger: Logger): ProblemResponse {
  if (error instanceof DomainError) {
    const status = ERROR_STATUS[error.code] ?? 500;
    if (status === 500) logger.error(`Unmapped domain error code ${error.code}`);
    return withRetryAfter(problem(status, error.code, error.message, error.extensions), error.retryAfterSeconds);
  }
  // The idempotency package's refusals carry their own status.
  if (error instanceof IdempotencyError) {
    const response = withRetryAfter(problem(error.status, error.code, error.message, error.extensions), error.retryAfterSeconds);
    return { ...response, headers: { ...error.headers, ...response.headers } };
  }
  // Nest wraps Fastify's own errors (body parsing, limits) in an HttpException with the original as cause.
  const fastifyCode = (error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code;
  if (typeof fastifyCode === 'string' && FASTIFY_ERRORS[fastifyCode]) {
    const [status, code, detail] = FASTIFY_ERRORS[fastifyCode];
    return withRetryAfter(problem(status, code, detail));
  }
  if (error instanceof HttpException) return fromHttpException(error);
  if (error instanceof SyntaxError || (error as { statusCode?: number })?.statusCode === 400) {
    return withRetryAfter(problem(400, 'malformed_request', 'The request could not be parsed.'));
  }
  if (isStoreUnavailable(error)) {
    logger.warn(`Store unavailable: ${(error as Error).name}`);
    return withRetryAfter(problem(503, 'store_unavailable', 'The data store is unavailable; retry later.'));
  }
  const { code, codeName } = (error ?? {}) as { code?: unknown; codeName?: unknown };
  const driverCode = code === undefined ? '' : ` [code ${JSON.stringify(code)}${codeName ? ` ${JSON.stringify(codeName)}` : ''}]`;
  logger.error(redactDriverValues(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}${driverCode}`));
  return withRetryAfter(problem(500, 'internal_error', 'An unexpected error occurred.'));
}

/** An unmapped E11000 names the duplicate value (`dup key: { _id: "acme:...:key:<raw key>" }`): logs keep the shape only. */
export function redactDriverValues(text: string): string {
  return text.replace(/dup key: \{[^}]*\}/g, 'dup key: { <redacted> }');
}

function fromHttpException(error: HttpException): ProblemResponse {
  const status = error.getStatus();
  const body = error.getResponse() as { message?: unknown; code?: string; details?: unknown } | string;
  if (status === 400 && typeof body === 'object' && Array.isArray(body.message)) {
    const refused = new RequestValidationError(body.message.map(String));
    return withRetryAfter(problem(400, refused.code, refused.message, refused.extensions));
  }
  if (status === 503 && typeof body === 'object' && 'details' in body) {
    // A failed readiness check (terminus): keep which dependency is down.
    return withRetryAfter(problem(503, 'not_ready', 'A dependency is not ready.', { details: body.details }));
  }
  const code = (typeof body === 'object' && body.code) || HTTP_EXCEPTION_CODES[status] || `http_${status}`;
  // Nest's router says "Cannot GET /the/url?and=query": never echoed (a client may put a secret in either).
  const fixed = FIXED_DETAILS[status];
  const detail = fixed ?? (typeof body === 'string' ? body : typeof body.message === 'string' ? body.message : error.message);
  return withRetryAfter(problem(status, code, detail));
}

/** Retry-After wherever a retry is meant: the error's own value, else its code's default (error-status.ts). */
function withRetryAfter(body: Problem, retryAfterSeconds?: number): ProblemResponse {
  return { problem: body, headers: retryAfterHeader(body.status, body.code, retryAfterSeconds) };
}

export function sendProblem(reply: FastifyReply, response: ProblemResponse): void {
  reply.status(response.problem.status).headers(response.headers).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(response.problem));
}

@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  catch(error: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (reply.sent) return;
    sendProblem(reply, toProblemResponse(error, this.logger));
  }
}
