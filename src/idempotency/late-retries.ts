import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { IdempotentRequest, IdempotentResult } from './idempotent-work.js';
import { storedForms } from './fingerprint.js';
import { decideLateRetry, expiredKeyResponse, tombstoneId, tombstoneScope } from './tombstone.js';
import { TombstoneRepository } from './tombstone.repository.js';

/**
 * The tombstone check, made only where a key is about to be claimed afresh
 * (absent, or finished and past retention): a replay or a conflict on a live
 * record never pays for it, and a new key costs one read by _id. The read
 * names every form this request's tombstone may have: the current
 * fingerprint algorithm and the older one a record may have finished under,
 * each plain or keyed by an erasure.
 */
@Injectable()
export class LateRetries {
  constructor(
    private readonly tombstones: TombstoneRepository,
    private readonly metrics: MetricsService,
    private readonly clock: Clock,
  ) {}

  /** The 409 answer for a late retry of an answered request, or null when the request is new. */
  async answer(request: IdempotentRequest): Promise<IdempotentResult | null> {
    const scope = tombstoneScope(request);
    const ids = storedForms(request.fingerprint).map((form) => tombstoneId(scope, form));
    const found = await this.metrics.timeStore('tombstone_lookup', () => this.tombstones.findByIds(ids));
    const now = this.clock.now();
    const tombstone = found.find((candidate) => decideLateRetry(candidate, request.fingerprint, now) === 'answer_expired');
    if (!tombstone) return null;
    this.metrics.lateRetries.inc({ operation: request.operation });
    // Not a replay (the stored bytes are gone). Idempotency-Expires: until then this key and body stay refused.
    return { response: expiredKeyResponse(tombstone), replayed: false, keyExpiresAt: tombstone.expiresAt };
  }
}
