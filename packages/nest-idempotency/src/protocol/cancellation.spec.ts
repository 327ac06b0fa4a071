import { describe, expect, it } from '@jest/globals';
import type { IdempotencyRecord } from './record.js';
import { situationOf, undoKeyFor, viewOf } from './cancellation.js';
import { deriveClaimId } from './ids.js';

const now = new Date('2026-06-01T12:00:00Z');
const sealed = { keyId: 'k1', iv: Buffer.alloc(12), tag: Buffer.alloc(16), data: Buffer.alloc(1) };
const requested = { requestedAt: now, canceledAt: null, outcome: null, location: null, references: {}, stoppedInFlight: false };

function record(overrides: Partial<IdempotencyRecord>): IdempotencyRecord {
  return {
    _id: 'acme:svc:orders.create:key:k',
    tenant: 'acme',
    operation: 'orders.create',
    clientKey: 'k',
    status: 'failed',
    fingerprint: { algorithm: 'sha256-jcs-v2', value: 'aaa' },
    schemaVersion: 1,
    ttlSeconds: 86400,
    attempt: 2,
    lease: null,
    recoveryPoint: 'failed',
    subject: null,
    response: null,
    conflict: null,
    cancellation: requested,
    createdAt: now,
    updatedAt: now,
    expiresAt: new Date(now.getTime() + 86_400_000),
    purgeAt: null,
    ...overrides,
  };
}

describe('cancel by key: what the canceler is told, and what every repeat answers', () => {
  it('an abandoned attempt is never_run; one this cancel stopped is stopped; a stored answer is answered, with its Location', () => {
    expect(situationOf(record({}))).toMatchObject({ state: 'never_run', attempt: { attempt: 2 } });
    expect(situationOf(record({ cancellation: { ...requested, stoppedInFlight: true } }))).toMatchObject({ state: 'stopped' });
    const answered = record({
      status: 'complete',
      response: { status: 201, headers: { location: '/v1/orders/ord_1' }, body: sealed, schemaVersion: 1 },
      cancellation: { ...requested, stoppedInFlight: true },
    });
    expect(situationOf(answered)).toMatchObject({ state: 'answered', responseStatus: 201, location: '/v1/orders/ord_1' });
  });

  it("names the attempt by its claim id (the consumer's resource ids) and gives it a deterministic undo key of its own", () => {
    const { attempt } = situationOf(record({}));
    expect(attempt!.claimId).toBe(deriveClaimId('acme:svc:orders.create:key:k', now, 2));
    expect(attempt!.undoKey).toBe(undoKeyFor('acme:svc:orders.create:key:k', now, 2));
    expect(attempt!.undoKey).toMatch(/^cnl_[0-9a-f]{32}$/);
    // Another attempt, or another incarnation of the key: another undo key (an undo never lands on the wrong attempt).
    expect(undoKeyFor('acme:svc:orders.create:key:k', now, 3)).not.toBe(attempt!.undoKey);
    expect(undoKeyFor('acme:svc:orders.create:key:k', new Date(now.getTime() + 1), 2)).not.toBe(attempt!.undoKey);
    // Names no key in clear.
    expect(attempt!.undoKey).not.toContain('acme');
  });

  it('the view of a canceled record: what the cancel stored, never the stored body', () => {
    const canceledAt = new Date(now.getTime() + 5);
    const view = viewOf(
      record({
        status: 'canceled',
        cancellation: {
          ...requested,
          canceledAt,
          outcome: 'refunded',
          location: '/v1/orders/ord_1',
          references: { orderId: 'ord_1', refundId: 'rfd_1' },
        },
      }),
    );
    expect(view).toEqual({
      key: 'k',
      operation: 'orders.create',
      status: 'canceled',
      outcome: 'refunded',
      location: '/v1/orders/ord_1',
      references: { orderId: 'ord_1', refundId: 'rfd_1' },
      requestedAt: now,
      canceledAt,
    });
  });
});
