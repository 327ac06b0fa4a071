import { describe, expect, it } from '@jest/globals';
import { erasedFingerprint, fingerprintRequest } from './fingerprint.js';
import {
  decideLateRetry,
  erasedTombstone,
  expiredKeyResponse,
  tombstoneFor,
  tombstoneId,
  tombstoneScope,
  type FinishedKey,
} from './tombstones.js';

const digestKey = Buffer.alloc(32, 9);

const body = { customerId: 'cus_1', amount: 10 };
const fingerprint = fingerprintRequest('POST', '/v1/orders', body);
const key: FinishedKey = { tenant: 't1', operation: 'orders.create', clientKey: 'k-1', fingerprint, subject: 'subject-digest' };
const finishedAt = new Date('2026-01-01T00:00:00Z');
const retainUntil = new Date('2026-01-02T00:00:00Z');
const created = { status: 201, headers: { 'content-type': 'application/json', location: '/v1/orders/ord_1' } };

describe('tombstoneFor', () => {
  it('keeps the status, the Location and the subject digest, and lives tombstoneSeconds past retention', () => {
    const tombstone = tombstoneFor(key, created, finishedAt, retainUntil, 3600);
    expect(tombstone).toMatchObject({ status: 201, location: '/v1/orders/ord_1', subject: 'subject-digest', finishedAt, fingerprint });
    expect(tombstone.expiresAt).toEqual(new Date('2026-01-02T01:00:00Z'));
    expect(tombstone._id).toBe(tombstoneId(tombstoneScope(key), fingerprint));
  });

  it('names neither the tenant nor the client key in clear, and keeps no body', () => {
    const text = JSON.stringify(tombstoneFor(key, created, finishedAt, retainUntil, 3600));
    expect(text).not.toContain('k-1');
    expect(text).not.toContain('"t1');
    expect(text).not.toContain('cus_1');
  });

  it('has no Location for an answer that created nothing', () => {
    expect(tombstoneFor(key, { status: 402, headers: {} }, finishedAt, retainUntil, 60).location).toBeNull();
  });

  it('leaves a keyed one for a record whose subject was erased in flight: its late retry is still refused', () => {
    const erased = erasedFingerprint(fingerprint, digestKey);
    const tombstone = tombstoneFor({ ...key, fingerprint: erased, subject: null }, created, finishedAt, retainUntil, 60);
    expect(tombstone).toMatchObject({ fingerprint: erased, subject: null, status: 201 });
    expect(JSON.stringify(tombstone)).not.toContain(fingerprint.value);
    const keyed = fingerprintRequest('POST', '/v1/orders', body, digestKey);
    expect(decideLateRetry(tombstone, keyed, finishedAt)).toBe('answer_expired');
    // Without the digest key the keyed form is no oracle; another body is a new request.
    expect(decideLateRetry(tombstone, fingerprint, finishedAt)).toBe('new_request');
    expect(decideLateRetry(tombstone, fingerprintRequest('POST', '/v1/orders', { ...body, amount: 11 }, digestKey), finishedAt)).toBe(
      'new_request',
    );
  });

  it("an erasure keys a tombstone's fingerprint, drops its subject and keeps what it answers", () => {
    const plain = tombstoneFor(key, created, finishedAt, retainUntil, 3600);
    const erased = erasedTombstone(plain, digestKey);
    expect(erased).toMatchObject({
      scope: plain.scope,
      status: 201,
      location: '/v1/orders/ord_1',
      expiresAt: plain.expiresAt,
      subject: null,
    });
    expect(erased._id).not.toBe(plain._id);
    expect(JSON.stringify(erased)).not.toContain(fingerprint.value);
    expect(erasedTombstone(erased, digestKey)).toEqual(erased);
  });

  it('gives each key of each tenant and operation its own scope', () => {
    const scopes = new Set(
      [key, { ...key, tenant: 't2' }, { ...key, operation: 'orders.refund' }, { ...key, clientKey: 'k-2' }].map(tombstoneScope),
    );
    expect(scopes.size).toBe(4);
  });
});

describe('decideLateRetry', () => {
  const tombstone = tombstoneFor(key, created, finishedAt, retainUntil, 3600);
  const before = new Date(tombstone.expiresAt.getTime() - 1);

  it('refuses the same body while the tombstone lives', () => {
    expect(decideLateRetry(tombstone, fingerprint, before)).toBe('answer_expired');
  });

  it('treats another body as a new request', () => {
    expect(decideLateRetry(tombstone, fingerprintRequest('POST', '/v1/orders', { ...body, amount: 11 }), before)).toBe('new_request');
  });

  it('ignores a tombstone past its own expiry, even if the TTL monitor has not collected it yet', () => {
    expect(decideLateRetry(tombstone, fingerprint, tombstone.expiresAt)).toBe('new_request');
  });

  it('treats no tombstone as a new request', () => {
    expect(decideLateRetry(null, fingerprint, before)).toBe('new_request');
  });
});

describe('expiredKeyResponse', () => {
  it('is a 409 problem pointing at the original resource', () => {
    const response = expiredKeyResponse(tombstoneFor(key, created, finishedAt, retainUntil, 3600));
    expect(response.status).toBe(409);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json', location: '/v1/orders/ord_1' });
    expect(JSON.parse(response.body)).toMatchObject({
      code: 'idempotency_key_expired',
      status: 409,
      originalStatus: 201,
      location: '/v1/orders/ord_1',
    });
  });

  it('has no Location header when the original answer named no resource', () => {
    const response = expiredKeyResponse(tombstoneFor(key, { status: 402, headers: {} }, finishedAt, retainUntil, 60));
    expect(response.headers['location']).toBeUndefined();
  });
});
