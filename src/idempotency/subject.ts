import { Inject, Injectable } from '@nestjs/common';
import { createHash, createHmac } from 'node:crypto';
import { idempotencyConfig, type IdempotencyConfig } from '../config/config.tokens.js';

/**
 * A data subject as records keep it: an HMAC of tenant + subject id under
 * PRIVACY_DIGEST_KEY, so a record never names a person in clear, an erasure
 * can still find it, and nobody without the key can test a guessed id
 * against it (an unkeyed hash of `cus_123` is found in a million guesses).
 */
export function subjectDigest(key: Buffer, tenant: string, subject: string): string {
  return createHmac('sha256', key).update(`subject\n${tenant}\n${subject}`).digest('hex');
}

/**
 * The unkeyed digest earlier releases wrote. Erasures still match it, so
 * records, tombstones and erasures written before the upgrade are found;
 * drop it one retention period (IDEMPOTENCY_TTL_SECONDS plus
 * IDEMPOTENCY_TOMBSTONE_SECONDS) after the upgrade.
 */
export function legacySubjectDigest(tenant: string, subject: string): string {
  return createHash('sha256').update(`${tenant}\n${subject}`).digest('hex');
}

/** The subject digests of this deployment: the one new documents carry, and every form an erasure must find. */
@Injectable()
export class SubjectDigests {
  private readonly key: Buffer;

  constructor(@Inject(idempotencyConfig.KEY) config: IdempotencyConfig) {
    this.key = config.digestKey;
  }

  of(tenant: string, subject: string): string {
    return subjectDigest(this.key, tenant, subject);
  }

  /** The keyed digest first, then the legacy one. */
  forms(tenant: string, subject: string): string[] {
    return [this.of(tenant, subject), legacySubjectDigest(tenant, subject)];
  }
}
