import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from './idempotency.errors.js';

/** 1-255 printable ASCII characters (space through tilde), as most providers accept. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** Validates the raw header; a repeated header (array) is refused rather than guessed at. */
export function parseIdempotencyKey(header: string | string[] | undefined): string {
  if (header === undefined || header === '') throw new IdempotencyKeyMissingError();
  if (Array.isArray(header) || !KEY_PATTERN.test(header)) throw new IdempotencyKeyInvalidError();
  return header;
}
