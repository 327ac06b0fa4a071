import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKeyEntry } from '../config/configuration.js';

const digest = (secret: string): Buffer => createHash('sha256').update(secret, 'utf8').digest();

/**
 * Tenant secrets, kept only as SHA-256 digests. Lookup compares the digest
 * of the presented secret with every entry in constant time, so neither
 * timing nor an early exit tells a caller how close a guess was.
 */
export class ApiKeyRegistry {
  private readonly entries: { tenant: string; digest: Buffer }[];

  constructor(keys: ApiKeyEntry[]) {
    this.entries = keys.map((key) => ({ tenant: key.tenant, digest: digest(key.secret) }));
  }

  tenantFor(secret: string): string | undefined {
    const presented = digest(secret);
    let tenant: string | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented) && tenant === undefined) tenant = entry.tenant;
    }
    return tenant;
  }
}

/** `Bearer <secret>` -> secret; anything else -> undefined. */
export function bearerSecret(header: string | undefined): string | undefined {
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? '');
  return match?.[1];
}
