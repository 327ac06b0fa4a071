import { describe, expect, it } from '@jest/globals';
import { ERASED_FINGERPRINT, fingerprintRequest, storedFingerprint } from '../fingerprint.js';
import { decodeEntry, decodeGeneration, decodeMarker, encodeEntry, encodeMarker, judgeEntry, type CacheEntry } from './cache-entry.js';

const now = new Date('2026-11-30T12:00:00Z');
const body = { customerId: 'cus_1', amount: 10 };
const request = fingerprintRequest('POST', '/v1/orders', body);

function entry(overrides: Partial<CacheEntry> = {}): CacheEntry {
  return {
    response: {
      status: 201,
      headers: { 'content-type': 'application/json' },
      schemaVersion: 1,
      body: { keyId: 'k1', iv: Buffer.from('iv'), tag: Buffer.from('tag'), data: Buffer.from('sealed') },
    },
    fingerprint: storedFingerprint(request),
    expiresAt: now.getTime() + 60_000,
    subject: 'subject-digest',
    generation: 3,
    ...overrides,
  };
}

const asked = (fingerprint = request) => ({ fingerprint, subject: 'subject-digest', generation: 3 });

describe('judgeEntry: what a cached answer may say without MongoDB', () => {
  it('replays the same request', () => {
    expect(judgeEntry(entry(), asked(), now)).toBe('replay');
  });

  it('refuses another body under the key (422)', () => {
    expect(judgeEntry(entry(), asked(fingerprintRequest('POST', '/v1/orders', { ...body, amount: 11 })), now)).toBe('mismatch');
  });

  it('replays a body stored under an earlier fingerprint algorithm', () => {
    expect(judgeEntry(entry({ fingerprint: request.previous[0] }), asked(), now)).toBe('replay');
  });

  it('replays an erased answer whatever the body, as the record does', () => {
    expect(judgeEntry(entry({ fingerprint: ERASED_FINGERPRINT }), asked(fingerprintRequest('POST', '/v1/orders', {})), now)).toBe('replay');
  });

  it.each([
    ['past the record expiry', entry({ expiresAt: now.getTime() }), asked()],
    ['written before an erasure of its subject', entry({ generation: 2 }), asked()],
    ['of another subject', entry({ subject: 'other' }), asked()],
    ['with an unreadable generation', entry({ generation: -1 }), { ...asked(), generation: -1 }],
  ])('sends an entry %s to MongoDB', (_, cached, seen) => {
    expect(judgeEntry(cached, seen, now)).toBe('ask_store');
  });
});

describe('wire forms', () => {
  it('round-trips an entry, buffers included, and reads BSON Binary-like bodies', () => {
    const original = entry();
    expect(decodeEntry(encodeEntry(original))).toEqual(original);
    const fromMongo = entry({
      response: {
        ...original.response,
        body: {
          keyId: 'k1',
          iv: { buffer: new Uint8Array([1]) },
          tag: { buffer: new Uint8Array([2]) },
          data: { buffer: new Uint8Array([3]) },
        } as never,
      },
    });
    expect(decodeEntry(encodeEntry(fromMongo))!.response.body.data).toEqual(Buffer.from([3]));
  });

  it.each([null, '', 'not json', '{"v":2}', '{"v":1}'])('treats %p as no entry', (text) => {
    expect(decodeEntry(text)).toBeNull();
  });

  it('round-trips a marker and rejects garbage', () => {
    expect(decodeMarker(encodeMarker({ owner: 'w1', fingerprint: storedFingerprint(request) }))).toEqual({
      owner: 'w1',
      fingerprint: storedFingerprint(request),
    });
    expect(decodeMarker('{"fp":{}}')).toBeNull();
  });

  it('reads a missing generation as 0 and garbage as unreadable', () => {
    expect(decodeGeneration(null)).toBe(0);
    expect(decodeGeneration('4')).toBe(4);
    expect(decodeGeneration('x')).toBe(-1);
  });
});
