import { ApiResponse } from '@nestjs/swagger';
import { PROBLEM_CONTENT_TYPE } from '@idempotent-orders/nest-idempotency';

/** The problem+json schema; src/openapi.ts registers it under this name. */
export const PROBLEM_SCHEMA_REF = { $ref: '#/components/schemas/Problem' };

/** Seconds to wait before retrying, sent with 409, 429 and 503. */
export const RETRY_AFTER_HEADER = { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } };

/**
 * Documents an error answer: every error is RFC 9457 problem+json, so only
 * the status, the `code`s (in the description) and any headers differ.
 */
export function ApiProblemResponse(status: number, description: string, headers?: typeof RETRY_AFTER_HEADER) {
  return ApiResponse({ status, description, headers, content: { [PROBLEM_CONTENT_TYPE]: { schema: PROBLEM_SCHEMA_REF } } });
}
