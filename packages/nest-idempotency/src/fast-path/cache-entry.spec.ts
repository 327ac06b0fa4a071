import { describe, expect, it } from '@jest/globals';
import { ERASED_FINGERPRINT, LEGACY_FINGERPRINT_ALGORITHM, fingerprintRequest, storedFingerprint } from '../protocol/fingerprint.js';
import { decodeEntry, decodeMarker, encodeEntry, encodeMarker, judgeEntry, Sealer, type CacheEntry } from './cache-entry.js';

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
    answeredAt: now.getTime() - 5_000,
    ...overrides,
  };
}

describe('judgeEntry: what a cached answer may say without MongoDB', () => {
  it('replays the same request', () => {
    expect(judgeEntry(entry(), request, now)).toBe('replay');
  });

  it('refuses another body under the key (422)', () => {
    expect(judgeEntry(entry(), fingerprintRequest('POST', '/v1/orders', { ...body, amount: 11 }), now)).toBe('mismatch');
  });

  it('replays a body stored under an earlier fingerprint algorithm', () => {
    const legacy = { algorithm: LEGACY_FINGERPRINT_ALGORITHM, value: request.under(LEGACY_FINGERPRINT_ALGORITHM)! };
    expect(judgeEntry(entry({ fingerprint: legacy }), request, now)).toBe('replay');
  });

  it('replays an erased answer whatever the body, as the record does', () => {
    expect(judgeEntry(entry({ fingerprint: ERASED_FINGERPRINT }), fingerprintRequest('POST', '/v1/orders', {}), now)).toBe('replay');
  });

  it('sends an entry past the record expiry to MongoDB (replacement and tombstones are its)', () => {
    expect(judgeEntry(entry({ expiresAt: now.getTime() }), request, now)).toBe('ask_store');
  });
});

describe('wire forms', () => {
  it('round-trips an entry, buffers included, and reads BSON Binary-like bodies', () => {
    const original = entry();
    expect(decodeEntry(encodeEntry(original))).toEqual(original);
    const binary = (bytes: number[]) => ({ buffer: new Uint8Array(bytes) }) as unknown as Buffer;
    const fromMongo = entry({
      response: { ...original.response, body: { keyId: 'k1', iv: binary([1]), tag: binary([2]), data: binary([3]) } },
    });
    expect(decodeEntry(encodeEntry(fromMongo))!.response.body.data).toEqual(Buffer.from([3]));
  });

  it('treats an entry of the previous release (no answer time) as no entry: MongoDB answers it with its date', () => {
    const wire = JSON.parse(encodeEntry(entry())) as Record<string, unknown>;
    expect(wire.at).toBe(now.getTime() - 5_000);
    delete wire.at;
    expect(decodeEntry(JSON.stringify(wire))).toBeNull();
  });

  it('treats an entry of format 2 (cached before the tenant check, issue 48) as no entry, whole and well formed as it is', () => {
    const wire = JSON.parse(encodeEntry(entry())) as Record<string, unknown>;
    expect(wire.v).toBe(3);
    expect(decodeEntry(JSON.stringify({ ...wire, v: 2 }))).toBeNull();
  });

  it.each([null, '', 'not json', '{"v":3}', '{"v":2}', '{"v":1}'])('treats %p as no entry', (text) => {
    expect(decodeEntry(text)).toBeNull();
  });

  it('round-trips a marker and rejects garbage', () => {
    expect(decodeMarker(encodeMarker({ owner: 'w1', fingerprint: storedFingerprint(request) }))).toEqual({
      owner: 'w1',
      fingerprint: storedFingerprint(request),
    });
    expect(decodeMarker('{"fp":{}}')).toBeNull();
  });
});

describe('Sealer: what the service acts on in Redis is authenticated', () => {
  const sealer = new Sealer(Buffer.alloc(32, 1));
  const json = '{"v":2,"status":201}';

  it('opens what it sealed for the same record, and nothing else', () => {
    const value = sealer.seal('rec-1', json);
    expect(sealer.open('rec-1', value)).toBe(json);
    expect(sealer.open('rec-2', value)).toBeNull();
    expect(sealer.open('rec-1', value.replace('201', '200'))).toBeNull();
    expect(sealer.open('rec-1', json)).toBeNull();
    expect(new Sealer(Buffer.alloc(32, 2)).open('rec-1', value)).toBeNull();
  });
});
