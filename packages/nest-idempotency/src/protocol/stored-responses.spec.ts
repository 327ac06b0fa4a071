import { describe, expect, it } from '@jest/globals';
import { createCipheriv, randomBytes } from 'node:crypto';
import { ResponseCipher } from './stored-responses.js';

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

  it('refuses a tag shorter than 16 bytes and an IV that is not 12 bytes (security review 2, #11)', () => {
    const cipher = new ResponseCipher(oldKey, [oldKey]);
    const sealed = cipher.seal('hello', 'rec-1');
    // GCM accepts a truncated tag unless told its length: a 4-byte tag is a 2^32 forgery.
    expect(() => cipher.open({ ...sealed, tag: sealed.tag.subarray(0, 4) }, 'rec-1')).toThrow(/tag length/);
    expect(() => cipher.open({ ...sealed, tag: sealed.tag.subarray(0, 12) }, 'rec-1')).toThrow(/tag length/);
    // A body sealed by hand with a 16-byte IV (which GCM would accept) is refused too.
    const iv = randomBytes(16);
    const gcm = createCipheriv('aes-256-gcm', oldKey.key, iv);
    gcm.setAAD(Buffer.from('rec-1'));
    const data = Buffer.concat([gcm.update('hello'), gcm.final()]);
    expect(() => cipher.open({ keyId: 'k1', iv, tag: gcm.getAuthTag(), data }, 'rec-1')).toThrow(/IV/);
    expect(cipher.open(sealed, 'rec-1')).toBe('hello');
  });

  it('refuses two keys with one id (the last one used to win, and the bodies of the other key failed to open)', () => {
    expect(() => new ResponseCipher(newKey, [newKey, { id: 'k2', key: randomBytes(32) }])).toThrow(/share the id "k2"/);
  });

  it('opens bodies sealed under a legacy alias with whichever aliased key sealed them', () => {
    const a = { id: 'ka', key: randomBytes(32), aliases: ['k1'] };
    const b = { id: 'kb', key: randomBytes(32), aliases: ['k1'] };
    const sealedByB = { ...new ResponseCipher({ id: 'k1', key: b.key }, [{ id: 'k1', key: b.key }]).seal('old', 'rec-1') };
    const rotated = new ResponseCipher(a, [a, b]);
    expect(sealedByB.keyId).toBe('k1');
    expect(rotated.open(sealedByB, 'rec-1')).toBe('old');
    expect(rotated.seal('new', 'rec-1').keyId).toBe('ka');
    // A key that has the id "k1" is tried first, the aliased ones after it.
    const explicit = { id: 'k1', key: randomBytes(32) };
    const sealedByExplicit = new ResponseCipher(explicit, [explicit]).seal('explicit', 'rec-1');
    const both = new ResponseCipher(a, [a, explicit, b]);
    expect(both.open(sealedByExplicit, 'rec-1')).toBe('explicit');
    expect(both.open(sealedByB, 'rec-1')).toBe('old');
    expect(() => new ResponseCipher(a, [a]).open(sealedByB, 'rec-1')).toThrow();
  });
});
