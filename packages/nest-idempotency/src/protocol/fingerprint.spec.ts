import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  BodyNotCanonicalError,
  canonicalJson,
  erasedFingerprint,
  fingerprintRequest,
  sameFingerprint,
  storedForms,
  storedFingerprint,
} from './fingerprint.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const body = { customerId: 'cus_1', items: [{ sku: 'a', quantity: 2 }], note: 'é\u2028', big: 1e21 };

describe('fingerprint v2: RFC 8785 (JSON Canonicalization Scheme)', () => {
  it('hashes the RFC 8785 form of method, route and body', () => {
    const fingerprint = fingerprintRequest('post', '/v1/orders', body);
    // RFC 8785: keys sorted by UTF-16 code units, ES number serialization (1e+21), minimal string escaping.
    const jcs =
      '{"body":{"big":1e+21,"customerId":"cus_1","items":[{"quantity":2,"sku":"a"}],"note":"é\u2028"},"method":"POST","route":"/v1/orders"}';
    expect(fingerprint).toMatchObject({ algorithm: 'sha256-jcs-v2', value: sha256(jcs) });
  });

  it('binds a key to its route and method: the same body on another route or with another method is another request', () => {
    const base = fingerprintRequest('POST', '/v1/orders/ord_1/refunds', body);
    expect(sameFingerprint(storedFingerprint(base), fingerprintRequest('POST', '/v1/orders/ord_1/refunds', body))).toBe(true);
    expect(sameFingerprint(storedFingerprint(base), fingerprintRequest('POST', '/v1/orders/ord_2/refunds', body))).toBe(false);
    expect(sameFingerprint(storedFingerprint(base), fingerprintRequest('PUT', '/v1/orders/ord_1/refunds', body))).toBe(false);
  });

  it('stores only algorithm and value', () => {
    expect(storedFingerprint(fingerprintRequest('POST', '/v1/orders', body))).toEqual({
      algorithm: 'sha256-jcs-v2',
      value: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });
});

describe('records stored under v1 are still verified', () => {
  const v1 = { algorithm: 'sha256-cjson-v1', value: sha256(canonicalJson({ method: 'POST', route: '/v1/orders', body })) };

  it('a v1 record matches the same request, and only it', () => {
    expect(sameFingerprint(v1, fingerprintRequest('POST', '/v1/orders', body))).toBe(true);
    expect(sameFingerprint(v1, fingerprintRequest('POST', '/v1/orders', { ...body, big: 2 }))).toBe(false);
  });

  it('a v2 record matches under v2; an unknown algorithm never matches', () => {
    const request = fingerprintRequest('POST', '/v1/orders', body);
    expect(sameFingerprint(storedFingerprint(request), request)).toBe(true);
    expect(sameFingerprint({ algorithm: 'md5-v0', value: request.value }, request)).toBe(false);
  });
});

describe('what an erasure leaves: a fingerprint keyed with the digest key', () => {
  const digestKey = Buffer.alloc(32, 5);
  const request = fingerprintRequest('POST', '/v1/orders', body, digestKey);
  const erased = erasedFingerprint(storedFingerprint(request), digestKey);

  it('matches the same request, not another body, and is no oracle without the key', () => {
    expect(erased.algorithm).toBe('erased-hmac-sha256:sha256-jcs-v2');
    expect(erased.value).not.toBe(request.value);
    expect(sameFingerprint(erased, request)).toBe(true);
    expect(sameFingerprint(erased, fingerprintRequest('POST', '/v1/orders', { ...body, big: 2 }, digestKey))).toBe(false);
    expect(sameFingerprint(erased, fingerprintRequest('POST', '/v1/orders', body))).toBe(false);
    expect(sameFingerprint(erased, fingerprintRequest('POST', '/v1/orders', body, Buffer.alloc(32, 6)))).toBe(false);
  });

  it('keys a v1 fingerprint too, and the request is found under every stored form', () => {
    const v1 = { algorithm: 'sha256-cjson-v1', value: sha256(canonicalJson({ method: 'POST', route: '/v1/orders', body })) };
    const erasedV1 = erasedFingerprint(v1, digestKey);
    expect(sameFingerprint(erasedV1, request)).toBe(true);
    expect(storedForms(request)).toEqual([storedFingerprint(request), erased, v1, erasedV1]);
  });
});

describe('a body the canonical form cannot hold', () => {
  it('is a 400 domain error, never a plain Error (a 500)', () => {
    expect(() => fingerprintRequest('POST', '/v1/orders', { n: Infinity })).toThrow(BodyNotCanonicalError);
    expect(() => fingerprintRequest('POST', '/v1/orders', { s: '\ud800' })).toThrow(BodyNotCanonicalError);
  });
});

describe('fingerprint v3: the resource a route with parameters names (issue 34)', () => {
  const capture = (id: string) => fingerprintRequest('POST', { route: '/payments/:id/capture', params: { id } }, { amountMinor: 100 });

  it('binds the key to the resolved parameters: another payment is another request', () => {
    expect(capture('pay_A')).toMatchObject({ algorithm: 'sha256-jcs-v3' });
    expect(sameFingerprint(storedFingerprint(capture('pay_A')), capture('pay_A'))).toBe(true);
    expect(sameFingerprint(storedFingerprint(capture('pay_A')), capture('pay_B'))).toBe(false);
  });

  it('hashes the RFC 8785 form of method, route, params and body', () => {
    const jcs = '{"body":{"amountMinor":100},"method":"POST","params":{"id":"pay_A"},"route":"/payments/:id/capture"}';
    expect(capture('pay_A').value).toBe(sha256(jcs));
  });

  it('stores a route without parameters under v2, byte for byte as before (its records and goldens unchanged)', () => {
    expect(fingerprintRequest('POST', { route: '/v1/orders', params: {} }, body)).toMatchObject(
      storedFingerprint(fingerprintRequest('POST', '/v1/orders', body)),
    );
  });

  it('a v2 record stored before v3 still matches its own request (template and body), as the migration promises', () => {
    const v2 = { algorithm: 'sha256-jcs-v2', value: fingerprintRequest('POST', '/payments/:id/capture', { amountMinor: 100 }).value };
    expect(sameFingerprint(v2, capture('pay_A'))).toBe(true);
    expect(
      sameFingerprint(v2, fingerprintRequest('POST', { route: '/payments/:id/capture', params: { id: 'x' } }, { amountMinor: 5 })),
    ).toBe(false);
  });

  it('a v2 request never claims to match a v3 record', () => {
    expect(fingerprintRequest('POST', '/v1/orders', body).under('sha256-jcs-v3')).toBeNull();
  });
});
