import { Inject, Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { CacheUnavailableError } from '../errors.js';
import { IdempotencyClock } from '../ports.js';
import { IdempotencyFastPath } from '../fast-path/fast-path.js';
import { IdempotencyRecordRepository } from '../store/record.repository.js';
import { StoredResponses } from '../protocol/stored-responses.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { erasedFingerprint } from '../protocol/fingerprint.js';
import { SubjectDigests } from '../protocol/ids.js';
import { SubjectLockRepository } from '../store/subject-lock.repository.js';
import { erasedTombstone } from '../protocol/tombstones.js';
import type { ErasedRecord } from '../protocol/record.js';
import { TombstoneRepository } from '../store/tombstone.repository.js';

export type { ErasedRecord };

/** The idempotency side of a data subject's erasure. */
@Injectable()
export class IdempotencyErasure {
  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly subjects: SubjectLockRepository,
    private readonly tombstones: TombstoneRepository,
    private readonly responses: StoredResponses,
    private readonly clock: IdempotencyClock,
    private readonly fastPath: IdempotencyFastPath,
    private readonly digests: SubjectDigests,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  /** Whether answers are cached in Redis (then an erasure must tell it). */
  get cacheEnabled(): boolean {
    return this.fastPath.enabled;
  }

  /**
   * Before the erasure transaction: the subject's records known now are
   * marked in Redis, so none of their answers is served from Redis from here
   * on. Throws CacheUnavailableError (503, nothing committed) when
   * Redis cannot be told: the erasure fails closed.
   */
  async guardCached(tenant: string, subject: string): Promise<void> {
    if (!this.fastPath.enabled) return;
    const records = await this.records.findForSubject(undefined, tenant, this.digests.forms(tenant, subject));
    try {
      await this.fastPath.guardRecords(records.map((record) => ({ recordId: record._id, expiresAt: record.expiresAt })));
    } catch (error) {
      if (!(error instanceof CacheUnavailableError)) throw error;
      throw new CacheUnavailableError('Nothing was erased: cached responses could not be marked in Redis first; retry the erasure.');
    }
  }

  /**
   * After the erasure transaction committed (never inside it: the body may
   * run again, and a cache read before the commit would warm the old answer
   * back): the erased records' cached answers leave Redis, and the records
   * stay marked until they expire. False when Redis cannot be told.
   */
  forgetCached(records: ErasedRecord[]): Promise<boolean> {
    return this.fastPath.forgetRecords(records);
  }

  /**
   * Inside the caller's transaction: every stored response of the subject
   * becomes a 410 `response_erased` (the record stays final, so a retry still
   * never re-executes); every record and tombstone of the subject keeps only
   * a keyed fingerprint of its body (erasedFingerprint: no oracle without the
   * digest key, yet another body still gets 422 and a late retry of the same
   * request is still refused) and no subject digest. One in flight has no
   * response yet: if it completes, the consumer builds its response from
   * data the erasure already changed, and its tombstone is keyed too; if it
   * is abandoned, the key answers 410 from then on instead of running the
   * erased request again (record-decision.ts). Writes are batched (one
   * round trip per collection), so a customer with thousands of records is
   * erased within the transaction limits. Call it first in the erasure
   * transaction: its first write is what makes a concurrent claim conflict.
   */
  async eraseSubject(session: ClientSession, tenant: string, subject: string): Promise<ErasedRecord[]> {
    const now = this.clock.now();
    const digests = this.digests.forms(tenant, subject);
    // First: the write every claim of this subject makes too, so a claim committing after this
    // transaction's snapshot conflicts with it instead of slipping past (SubjectLockRepository).
    // Kept one retention period: only requests received before this erasure care about its time.
    await this.subjects.touchForErasure(session, digests, now, new Date(now.getTime() + this.config.ttlSeconds * 1000));
    const records = await this.records.findForSubject(session, tenant, digests);
    await this.records.redactAll(
      session,
      records.map((record) => ({
        recordId: record._id,
        fingerprint: erasedFingerprint(record.fingerprint, this.config.digestKey),
        response: record.response ? this.responses.erased(record) : null,
      })),
      now,
    );
    const tombstones = await this.tombstones.findForSubject(session, digests);
    await this.tombstones.replaceAll(
      session,
      tombstones.map((old) => ({ old, erased: erasedTombstone(old, this.config.digestKey) })),
    );
    return records.map((record) => ({ recordId: record._id, expiresAt: record.expiresAt }));
  }
}
