import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { redactDriverValues } from '../common/problem-details.filter.js';
import { logDigest, logDigestKey } from './log-digest.js';

describe('what logs may say about a value they must not print', () => {
  const key = logDigestKey(Buffer.alloc(32, 1));

  it('digests are keyed and per tenant: not the unkeyed hash, not equal across tenants or keys', () => {
    const digest = logDigest(key, 'acme', 'k-1');
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(digest).toBe(logDigest(key, 'acme', 'k-1'));
    expect(digest).not.toBe(createHash('sha256').update('k-1').digest('hex').slice(0, 16));
    expect(digest).not.toBe(logDigest(key, 'globex', 'k-1'));
    expect(digest).not.toBe(logDigest(logDigestKey(Buffer.alloc(32, 2)), 'acme', 'k-1'));
  });

  it('an unmapped duplicate-key error loses the duplicate value (the raw Idempotency-Key)', () => {
    const text =
      'MongoServerError: E11000 duplicate key error collection: orders.x index: _id_ dup key: { _id: "acme:orders-service:orders.create:key:raw-4242" }';
    expect(redactDriverValues(text)).toBe(
      'MongoServerError: E11000 duplicate key error collection: orders.x index: _id_ dup key: { <redacted> }',
    );
  });
});
