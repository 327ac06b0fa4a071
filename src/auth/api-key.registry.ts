import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ApiKeyEntry, ApiKeyScope } from '../config/configuration.js';

const digest = (secret: string): Buffer => createHash('sha256').update(secret, 'utf8').digest();

/** Who is calling: the tenant, which of its keys (for audit lines), and what that key may do. */
export interface ApiKeyIdentity {
  tenant: string;
  keyId: string;
  scopes: readonly ApiKeyScope[];
}

/**
 * Tenant secrets, kept only as SHA-256 digests. Lookup compares the digest
 * of the presented secret with every entry in constant time, so neither
 * timing nor an early exit tells a caller how close a guess was.
 */
export class ApiKeyRegistry {
  private readonly entries: (ApiKeyIdentity & { digest: Buffer })[];
  /** Per request, what its header proved (the early refusal of a body and the guard both ask; one digest is enough). */
  private readonly byRequest = new WeakMap<IncomingMessage, ApiKeyIdentity | null>();

  constructor(keys: ApiKeyEntry[]) {
    this.entries = keys.map((key) => ({ tenant: key.tenant, keyId: key.id, scopes: key.scopes, digest: digest(key.secret) }));
  }

  identify(secret: string): ApiKeyIdentity | undefined {
    const presented = digest(secret);
    let found: ApiKeyIdentity | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented) && found === undefined) found = entry;
    }
    return found && { tenant: found.tenant, keyId: found.keyId, scopes: found.scopes };
  }

  tenantFor(secret: string): string | undefined {
    return this.identify(secret)?.tenant;
  }

  /** The identity behind a request's Authorization header, worked out once per request. */
  authenticateRequest(request: IncomingMessage): ApiKeyIdentity | undefined {
    let identity = this.byRequest.get(request);
    if (identity === undefined) {
      identity = this.authenticate(request.headers.authorization) ?? null;
      this.byRequest.set(request, identity);
    }
    return identity ?? undefined;
  }

  /** The identity behind an Authorization header, if it is a well-formed Bearer of a known secret. */
  authenticate(header: string | undefined): ApiKeyIdentity | undefined {
    const secret = bearerSecret(header);
    return secret === undefined ? undefined : this.identify(secret);
  }
}

/** `Bearer <secret>` -> secret; anything else -> undefined. */
export function bearerSecret(header: string | undefined): string | undefined {
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? '');
  return match?.[1];
}
