import { describe, expect, it } from '@jest/globals';
import type { IdempotencyRecord } from './record.js';
import { ERASED_FINGERPRINT, erasedFingerprint, fingerprintRequest, storedFingerprint } from './fingerprint.js';
import { decide } from './record.js';

const now = new Date('2026-06-01T12:00:00Z');
const later = (ms: number) => new Date(now.getTime() + ms);
const fingerprint = { algorithm: 'sha256-cjson-v1', value: 'aaa' };
const sealed = { keyId: 'k1', iv: Buffer.alloc(12), tag: Buffer.alloc(16), data: Buffer.alloc(1) };

function record(overrides: Partial<IdempotencyRecord>): IdempotencyRecord {
  return {
    _id: 'acme:svc:orders.create:v1:k',
    tenant: 'acme',
    operation: 'orders.create',
    clientKey: 'k',
    status: 'pending',
    fingerprint,
    schemaVersion: 1,
    ttlSeconds: 86400,
    attempt: 1,
    lease: { owner: 'w1', lockedAt: now, expiresAt: later(30_000) },
    recoveryPoint: null,
    subject: null,
    response: null,
    conflict: null,
    createdAt: now,
    updatedAt: now,
    expiresAt: later(86_400_000),
    purgeAt: null,
    ...overrides,
  };
}

const stored = { status: 201, headers: {}, body: sealed, schemaVersion: 1 };

describe('decide (what to do with a record found under the key)', () => {
  it.each([
    ['complete -> replay', record({ status: 'complete', lease: null, response: stored }), 'replay'],
    [
      'failed with a stored response (declined) -> replay',
      record({ status: 'failed', lease: null, response: { ...stored, status: 402 } }),
      'replay',
    ],
    ['failed without a response (abandoned) -> restart', record({ status: 'failed', lease: null }), 'restart'],
    ['pending with a live lease -> in_flight', record({}), 'in_flight'],
    ['pending with an expired lease -> take_over', record({ lease: { owner: 'w1', lockedAt: now, expiresAt: later(-1) } }), 'take_over'],
    ['pending, lease expiring exactly now -> take_over', record({ lease: { owner: 'w1', lockedAt: now, expiresAt: now } }), 'take_over'],
  ])('%s', (_, found, expected) => {
    expect(decide(found, fingerprint, now)).toBe(expected);
  });

  it("refuses another body under the same key (mismatch) whatever the live record's status", () => {
    const other = { ...fingerprint, value: 'bbb' };
    expect(decide(record({ status: 'complete', response: stored, lease: null }), other, now)).toBe('mismatch');
    expect(decide(record({}), other, now)).toBe('mismatch');
    expect(decide(record({ status: 'failed', lease: null }), other, now)).toBe('mismatch');
  });

  it('treats a finished record past its retention as absent, whatever the body', () => {
    const expired = record({ status: 'complete', response: stored, lease: null, expiresAt: later(-1) });
    expect(decide(expired, fingerprint, now)).toBe('replace_expired');
    expect(decide(expired, { ...fingerprint, value: 'bbb' }, now)).toBe('replace_expired');
  });

  it('never replaces unfinished work, even past its retention (it may hold a charge)', () => {
    const stale = record({ expiresAt: later(-1), lease: { owner: 'w1', lockedAt: now, expiresAt: later(-1) } });
    expect(decide(stale, fingerprint, now)).toBe('take_over');
  });

  it('a record the previous release erased (no fingerprint left) answers any body with its stored response, or 410 if it has none', () => {
    const erased = record({ status: 'complete', response: { ...stored, status: 410 }, lease: null, fingerprint: ERASED_FINGERPRINT });
    expect(decide(erased, { ...fingerprint, value: 'bbb' }, now)).toBe('replay');
    // Abandoned, then erased (or erased while in flight, then abandoned): a new attempt would run the erased request again.
    expect(decide({ ...erased, response: null, status: 'failed' }, fingerprint, now)).toBe('erased');
  });

  it('a record erased in flight keeps a keyed fingerprint: only the same request resumes it, another body gets 422', () => {
    const digestKey = Buffer.alloc(32, 3);
    const body = { customerId: 'cus_1', amount: 10 };
    const same = fingerprintRequest('POST', '/v1/orders', body, digestKey);
    const other = fingerprintRequest('POST', '/v1/orders', { ...body, amount: 99 }, digestKey);
    const pending = record({ fingerprint: erasedFingerprint(storedFingerprint(same), digestKey), lease: null });
    expect(decide(pending, same, now)).toBe('take_over');
    expect(decide(pending, other, now)).toBe('mismatch');
    const answered = { ...pending, status: 'complete' as const, response: { ...stored, status: 410 } };
    expect(decide(answered, same, now)).toBe('replay');
    expect(decide(answered, other, now)).toBe('mismatch');
    expect(decide({ ...pending, status: 'failed', response: null }, same, now)).toBe('erased');
  });

  it('compares the fingerprint algorithm too', () => {
    expect(decide(record({}), { algorithm: 'sha256-cjson-v2', value: 'aaa' }, now)).toBe('mismatch');
  });

  describe('a canceled key', () => {
    const requested = { requestedAt: now, canceledAt: null, outcome: null, location: null, references: {}, stoppedInFlight: true };
    const canceled = record({
      status: 'canceled',
      lease: null,
      response: stored,
      cancellation: { ...requested, canceledAt: now, outcome: 'refunded', location: '/v1/orders/ord_1' },
    });
    const other = { ...fingerprint, value: 'bbb' };

    it('is refused for any body, never replayed, restarted or taken over', () => {
      expect(decide(canceled, fingerprint, now)).toBe('canceled');
      expect(decide(canceled, other, now)).toBe('canceled');
      expect(decide(record({ status: 'canceled', lease: null, fingerprint: { algorithm: 'canceled', value: '' } }), other, now)).toBe(
        'canceled',
      );
      expect(decide({ ...canceled, fingerprint: ERASED_FINGERPRINT, response: null }, other, now)).toBe('canceled');
    });

    it("is refused from the cancel's first write on, while its undo still runs (whatever the status under it)", () => {
      expect(decide(record({ cancellation: requested }), fingerprint, now)).toBe('canceled');
      expect(decide(record({ cancellation: requested, lease: { owner: 'c', lockedAt: now, expiresAt: later(-1) } }), other, now)).toBe(
        'canceled',
      );
      expect(decide(record({ status: 'failed', lease: null, cancellation: requested }), fingerprint, now)).toBe('canceled');
      expect(decide(record({ status: 'complete', lease: null, response: stored, cancellation: requested }), other, now)).toBe('canceled');
    });

    it('ends with its own retention (record TTL + tombstone period, set by the cancel): then a new request is new', () => {
      expect(decide({ ...canceled, expiresAt: later(-1) }, fingerprint, now)).toBe('replace_expired');
      // A record still pending under a cancel is never replaced, past any expiry.
      expect(decide(record({ cancellation: requested, expiresAt: later(-1) }), fingerprint, now)).toBe('canceled');
    });

    it('records written before cancels existed (no cancellation field) decide as before', () => {
      const legacy = record({ status: 'complete', lease: null, response: stored });
      delete legacy.cancellation;
      expect(decide(legacy, fingerprint, now)).toBe('replay');
      expect(decide({ ...legacy, cancellation: null }, fingerprint, now)).toBe('replay');
    });
  });
});
