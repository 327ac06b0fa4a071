import { createHmac, hkdfSync } from 'node:crypto';

/**
 * How a value that must not be logged (an Idempotency-Key, a customer id) is
 * logged when a line needs to be correlated: an HMAC under a deployment
 * secret, over the tenant and the value. Keyed, so a low-entropy key cannot be
 * recovered from logs by guessing; per tenant, so two tenants' identical keys
 * do not correlate. 16 hex characters (64 bits) tell lines apart.
 */
export function logDigest(secret: Buffer, tenant: string | undefined, value: string): string {
  return createHmac('sha256', secret)
    .update(`${tenant ?? ''}\n${value}`, 'utf8')
    .digest('hex')
    .slice(0, 16);
}

/** A key of its own for log digests, derived from PRIVACY_DIGEST_KEY (HKDF: a log digest never equals a digest the database keeps). */
export function logDigestKey(privacyDigestKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', privacyDigestKey, Buffer.alloc(0), 'idempotent-orders log digest v1', 32));
}
