import type { IncomingMessage } from 'node:http';
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from './idempotency.errors.js';

/** 1-255 printable ASCII characters (space through tilde), as most providers accept. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** Validates the raw header; a repeated header (array) is refused rather than guessed at. */
export function parseIdempotencyKey(header: string | string[] | undefined): string {
  if (header === undefined || header === '') throw new IdempotencyKeyMissingError();
  if (Array.isArray(header) || !KEY_PATTERN.test(header)) throw new IdempotencyKeyInvalidError();
  return header;
}

/**
 * The header as the client sent it. Node joins a repeated header into one
 * string ("a, b" - itself a valid key), so the distinct values are read: two
 * headers come back as an array, which parseIdempotencyKey refuses.
 */
export function idempotencyKeyHeader(request: IncomingMessage): string | string[] | undefined {
  const values = request.headersDistinct['idempotency-key'];
  if (values === undefined) return undefined;
  return values.length === 1 ? values[0] : values;
}
