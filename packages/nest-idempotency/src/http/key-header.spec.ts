import { describe, expect, it } from '@jest/globals';
import { deriveClaimId } from '../protocol/ids.js';
import { canonicalJson, fingerprintRequest } from '../protocol/fingerprint.js';
import { parseIdempotencyKey } from './key-header.js';
import { IdempotencyKeyInvalidError, IdempotencyKeyMissingError } from '../errors.js';
import { retryAfterSeconds } from '../protocol/timing.js';
import { LEGACY_SCOPE_KEY, legacyScopeKeys, scopeKey } from '../protocol/ids.js';

describe('parseIdempotencyKey', () => {
  it('accepts 1-255 printable ASCII characters', () => {
    expect(parseIdempotencyKey('a')).toBe('a');
    expect(parseIdempotencyKey('order 42: retry ~ #1')).toBe('order 42: retry ~ #1');
    expect(parseIdempotencyKey('x'.repeat(255))).toHaveLength(255);
  });

  it('refuses a missing or empty key', () => {
    expect(() => parseIdempotencyKey(undefined)).toThrow(IdempotencyKeyMissingError);
    expect(() => parseIdempotencyKey('')).toThrow(IdempotencyKeyMissingError);
  });

  it.each([
    ['too long', 'x'.repeat(256)],
    ['non-ASCII', 'clé'],
    ['control character', 'a\u0000b'],
    ['tab', 'a\tb'],
    ['DEL', 'a\u007fb'],
  ])('refuses a %s key', (_, key) => {
    expect(() => parseIdempotencyKey(key)).toThrow(IdempotencyKeyInvalidError);
  });

  it('refuses a repeated header rather than picking one', () => {
    expect(() => parseIdempotencyKey(['a', 'b'])).toThrow(IdempotencyKeyInvalidError);
    // Its detail names the cause (each copy may be a valid key), as the draft says: send one header.
    expect(() => parseIdempotencyKey(['a', 'b'])).toThrow('Idempotency-Key was sent more than once; send exactly one.');
  });
});

describe('scopeKey', () => {
  const base = { tenant: 'acme', service: 'orders-service', operation: 'orders.create', clientKey: 'k1' };

  it('builds tenant:service:operation:key:clientKey, with no schema version in it', () => {
    expect(scopeKey(base)).toBe('acme:orders-service:orders.create:key:k1');
  });

  it('gives another tenant or operation another record', () => {
    const keys = new Set([scopeKey(base), scopeKey({ ...base, tenant: 'globex' }), scopeKey({ ...base, operation: 'refunds.create' })]);
    expect(keys.size).toBe(3);
  });

  it('keeps client keys containing ":" unambiguous (the key comes last, other parts cannot contain ":")', () => {
    expect(scopeKey({ ...base, clientKey: 'a:b' })).toBe('acme:orders-service:orders.create:key:a:b');
    expect(() => scopeKey({ ...base, operation: 'orders:create' })).toThrow();
  });

  it('takes a tenant with ":" (a URN) by encoding its segment, never colliding with another tenant (SEC4-10)', () => {
    expect(scopeKey({ ...base, tenant: 'org:42' })).toBe('org%3A42:orders-service:orders.create:key:k1');
    const tenants = ['org:42', 'org%3A42', 'org%253A42', 'org', 'org:', '%'];
    expect(new Set(tenants.map((tenant) => scopeKey({ ...base, tenant }))).size).toBe(tenants.length);
    expect(scopeKey(base)).toBe('acme:orders-service:orders.create:key:k1');
  });

  it("never looks a ':' tenant up under a raw legacy id another tenant's record may hold", () => {
    expect(scopeKey({ ...base, tenant: 'a%b' })).toBe('a%25b:orders-service:orders.create:key:k1');
    expect(legacyScopeKeys({ ...base, tenant: 'org:42' }, 2)).toEqual([]);
    expect(legacyScopeKeys(base, 1)).toEqual(['acme:orders-service:orders.create:v1:k1']);
  });

  it('never builds an id of the earlier versioned format, whatever the client key', () => {
    // Before: `...:v1:abc` was key "abc" at version 1; a client key "v1:abc" must not land on it.
    expect(scopeKey({ ...base, clientKey: 'v1:abc' })).not.toMatch(LEGACY_SCOPE_KEY);
    expect('acme:orders-service:orders.create:v1:abc').toMatch(LEGACY_SCOPE_KEY);
  });
});

describe('fingerprint', () => {
  it('ignores object key order but keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 2], c: null } })).toBe('{"a":{"c":null,"d":[1,2]},"b":1}');
    const one = fingerprintRequest('POST', '/v1/orders', { a: 1, b: [1, 2] });
    const reordered = fingerprintRequest('post', '/v1/orders', { b: [1, 2], a: 1 });
    expect(reordered.value).toBe(one.value);
    expect(reordered.under('sha256-cjson-v1')).toBe(one.under('sha256-cjson-v1'));
    expect(fingerprintRequest('POST', '/v1/orders', { a: 1, b: [2, 1] }).value).not.toBe(one.value);
  });

  it('binds method and route as well as the body', () => {
    const body = { a: 1 };
    const base = fingerprintRequest('POST', '/v1/orders', body).value;
    expect(fingerprintRequest('PUT', '/v1/orders', body).value).not.toBe(base);
    expect(fingerprintRequest('POST', '/v1/refunds', body).value).not.toBe(base);
  });

  it('is a versioned SHA-256', () => {
    const fingerprint = fingerprintRequest('POST', '/v1/orders', {});
    expect(fingerprint.algorithm).toBe('sha256-jcs-v2');
    expect(fingerprint.value).toMatch(/^[0-9a-f]{64}$/);
  });

  it('distinguishes values that stringify alike', () => {
    expect(canonicalJson({ a: '1' })).not.toBe(canonicalJson({ a: 1 }));
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });
});

describe('retryAfterSeconds', () => {
  const now = new Date('2026-01-01T00:00:00Z');

  it('rounds the lease time left up to whole seconds', () => {
    expect(retryAfterSeconds(new Date(now.getTime() + 29_001), now)).toBe(30);
    expect(retryAfterSeconds(new Date(now.getTime() + 1_000), now)).toBe(1);
  });

  it('is at least 1 even when the lease has just run out', () => {
    expect(retryAfterSeconds(new Date(now.getTime() - 5_000), now)).toBe(1);
  });
});

describe('deriveClaimId', () => {
  const created = new Date('2026-01-01T00:00:00Z');

  it('is stable for one attempt and differs across attempts and incarnations', () => {
    expect(deriveClaimId('k', created, 1)).toBe(deriveClaimId('k', created, 1));
    expect(deriveClaimId('k', created, 2)).not.toBe(deriveClaimId('k', created, 1));
    expect(deriveClaimId('k', new Date(created.getTime() + 1), 1)).not.toBe(deriveClaimId('k', created, 1));
  });
});
