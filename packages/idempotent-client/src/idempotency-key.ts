// The Idempotency-Key itself: random for a caller without an id of its own,
// derived from the caller's id (an agent's tool call) otherwise.

/** 1-255 printable ASCII (0x20-0x7E), what the server accepts as a key. */
const KEY_SYNTAX = /^[\x20-\x7e]{1,255}$/;

/** True when `key` is a syntactically valid Idempotency-Key (1-255 printable ASCII). */
export function isValidIdempotencyKey(key: string): boolean {
  return KEY_SYNTAX.test(key);
}

/** A fresh random key (a UUID v4), for an operation that has no id of its own. */
export function randomIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * A key derived deterministically from the caller's ids, e.g.
 * `deriveIdempotencyKey(conversationId, toolCallId)`: SHA-256 (hex) of the
 * parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ.
 * The same tool call always gets the same key - in another process, after a
 * crash, with no store at all - and two different calls never share one.
 */
export async function deriveIdempotencyKey(...parts: string[]): Promise<string> {
  if (parts.length === 0) throw new TypeError('deriveIdempotencyKey needs at least one part');
  const framed = parts.map((part) => `${part.length}:${part}`).join('|');
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(framed));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
