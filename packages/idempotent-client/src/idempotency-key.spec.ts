import { describe, expect, it } from '@jest/globals';
import { deriveIdempotencyKey, isValidIdempotencyKey, randomIdempotencyKey } from './idempotency-key.js';

describe('idempotency keys', () => {
  it('a random key is a UUID, a valid key, and new each time', () => {
    const key = randomIdempotencyKey();
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isValidIdempotencyKey(key)).toBe(true);
    expect(randomIdempotencyKey()).not.toBe(key);
  });

  it('a derived key is the same for the same ids, 64 hex digits, and length-framed', async () => {
    const key = await deriveIdempotencyKey('conv_1', 'call_1');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await deriveIdempotencyKey('conv_1', 'call_1')).toBe(key);
    expect(await deriveIdempotencyKey('conv_1', 'call_2')).not.toBe(key);
    expect(await deriveIdempotencyKey('ab', 'c')).not.toBe(await deriveIdempotencyKey('a', 'bc'));
    await expect(deriveIdempotencyKey()).rejects.toThrow('at least one part');
  });

  it('the syntax is 1-255 printable ASCII', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('tab\there')).toBe(false);
    expect(isValidIdempotencyKey('é')).toBe(false);
  });
});
