import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ResponseCipher } from '@idempotent-orders/nest-idempotency/testing';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

const key = Buffer.alloc(32, 7).toString('base64');

describe('encryption and digest keys', () => {
  it('validates encryption keys and the privacy digest key', () => {
    expect(problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: 'c2hvcnQ=' })).toEqual([
      expect.stringMatching(/^IDEMPOTENCY_ENCRYPTION_KEY: .*32 bytes/),
    ]);
    expect(problemsOf({ PRIVACY_DIGEST_KEY: 'c2hvcnQ=' })).toEqual([expect.stringMatching(/^PRIVACY_DIGEST_KEY: .*32 bytes/)]);
  });

  it('keeps retired decryption keys after the current one', () => {
    const old = Buffer.alloc(32, 1).toString('base64');
    const config = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: `k2:${key}`, IDEMPOTENCY_DECRYPTION_KEYS: `k1:${old}` });
    expect(config.idempotency.decryptionKeys.map((k) => k.id)).toEqual(['k2', 'k1']);
  });

  it('rotates as the README says: a bare new key and the old one listed as k1 both open (security review 2, #2)', () => {
    const old = randomBytes(32);
    const before = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: old.toString('base64') }).idempotency;
    const sealedBefore = new ResponseCipher(before.encryptionKey, before.decryptionKeys).seal('before', 'rec-1');
    const fresh = randomBytes(32).toString('base64');
    for (const retired of [`k1:${old.toString('base64')}`, old.toString('base64')]) {
      const after = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: fresh, IDEMPOTENCY_DECRYPTION_KEYS: retired }).idempotency;
      expect(new Set(after.decryptionKeys.map((k) => k.id)).size).toBe(2);
      const cipher = new ResponseCipher(after.encryptionKey, after.decryptionKeys);
      expect(cipher.open(cipher.seal('after', 'rec-2'), 'rec-2')).toBe('after');
      expect(cipher.open(sealedBefore, 'rec-1')).toBe('before');
    }
    // Bodies an earlier release sealed with a bare key carry the id "k1": still opened after the upgrade.
    const legacy = new ResponseCipher({ id: 'k1', key: old }, [{ id: 'k1', key: old }]).seal('legacy', 'rec-3');
    const upgraded = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: old.toString('base64') }).idempotency;
    expect(new ResponseCipher(upgraded.encryptionKey, upgraded.decryptionKeys).open(legacy, 'rec-3')).toBe('legacy');
  });

  it('refuses two keys with one id, naming the id and never a key', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    const problems = problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: `k2:${a}`, IDEMPOTENCY_DECRYPTION_KEYS: `k2:${b}` });
    expect(problems).toEqual([expect.stringMatching(/key ids must be unique \(repeated: k2\)/)]);
    expect(problems.join('')).not.toContain(a);
    expect(problems.join('')).not.toContain(b);
    expect(problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: a, IDEMPOTENCY_DECRYPTION_KEYS: a })).toEqual([
      expect.stringMatching(/key ids must be unique/),
    ]);
  });
});
