import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ResponseCipher } from './response-cipher.js';

const oldKey = { id: 'k1', key: randomBytes(32) };
const newKey = { id: 'k2', key: randomBytes(32) };

describe('ResponseCipher', () => {
  it('round-trips and does not contain the plaintext', () => {
    const cipher = new ResponseCipher(oldKey, [oldKey]);
    const sealed = cipher.seal('{"card":"4242"}', 'rec-1');
    expect(sealed.keyId).toBe('k1');
    expect(sealed.data.toString('utf8')).not.toContain('4242');
    expect(cipher.open(sealed, 'rec-1')).toBe('{"card":"4242"}');
  });

  it('still opens what a retired key sealed after a rotation', () => {
    const sealed = new ResponseCipher(oldKey, [oldKey]).seal('hello', 'rec-1');
    const rotated = new ResponseCipher(newKey, [newKey, oldKey]);
    expect(rotated.open(sealed, 'rec-1')).toBe('hello');
    expect(rotated.seal('hello', 'rec-1').keyId).toBe('k2');
  });

  it('refuses a body moved to another record, tampered with, or sealed by an unknown key', () => {
    const cipher = new ResponseCipher(oldKey, [oldKey]);
    const sealed = cipher.seal('hello', 'rec-1');
    expect(() => cipher.open(sealed, 'rec-2')).toThrow();
    expect(() => cipher.open({ ...sealed, data: Buffer.from('jello') }, 'rec-1')).toThrow();
    expect(() => new ResponseCipher(newKey, [newKey]).open(sealed, 'rec-1')).toThrow(/No decryption key/);
  });
});
