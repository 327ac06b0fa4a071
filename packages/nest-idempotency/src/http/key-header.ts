import type { IncomingMessage } from 'node:http';
import { parseItem } from 'structured-headers';
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from '../errors.js';

/** 1-255 printable ASCII characters (space through tilde), as most providers accept. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/**
 * Validates the raw header and returns the key. Two syntaxes name one key:
 * the bare value (`abc`), and the IETF draft's Structured Field String
 * (`"abc"`, RFC 8941, with `\"` and `\\` escapes), so a client library that
 * quotes and one that does not share a key. A repeated header (array) is
 * refused rather than guessed at.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string {
  if (header === undefined || header === '') throw new IdempotencyKeyMissingError();
  if (Array.isArray(header)) throw new IdempotencyKeyInvalidError('Idempotency-Key was sent more than once; send exactly one.');
  const key = header.startsWith('"') ? sfString(header) : header;
  if (!KEY_PATTERN.test(key)) throw new IdempotencyKeyInvalidError();
  return key;
}

/** A value that opens with a quote must be exactly one sf-string (no parameters); anything else is malformed. */
function sfString(header: string): string {
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(header);
  } catch {
    throw new IdempotencyKeyInvalidError();
  }
  const value: unknown = item[0];
  if (typeof value !== 'string' || item[1].size > 0) throw new IdempotencyKeyInvalidError();
  return value;
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
