import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { Clock } from '../common/clock.js';
import { IdempotencyFastPath } from './fast-path/idempotency-fast-path.js';
import { IdempotencyRecordRepository } from './idempotency-record.repository.js';
import { StoredResponses } from './stored-responses.js';
import { subjectDigest } from './subject.js';
import { SubjectLockRepository } from './subject-lock.repository.js';
import { TombstoneRepository } from './tombstone.repository.js';

/** The idempotency side of a data subject's erasure. */
@Injectable()
export class IdempotencyErasure {
  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly subjects: SubjectLockRepository,
    private readonly tombstones: TombstoneRepository,
    private readonly responses: StoredResponses,
    private readonly clock: Clock,
    private readonly fastPath: IdempotencyFastPath,
  ) {}

  /**
   * After the erasure transaction committed (never inside it: the body may
   * run again, and a cache read before the commit would warm the old answer
   * back): the subject's cached answers in Redis become unreadable. Throws
   * CacheInvalidationFailedError (503) when Redis cannot be told; repeating
   * the erasure is safe.
   */
  forgetCached(recordIds: string[]): Promise<void> {
    return this.fastPath.forgetRecords(recordIds);
  }

  /**
   * Inside the caller's transaction: every stored response of the subject
   * becomes a 410 `response_erased` (the record stays final, so a retry still
   * never re-executes), and every record of the subject forgets its body's
   * fingerprint - finished or still in flight - and its tombstones are
   * deleted (a late retry of an erased request is a new request). One in flight has no response
   * yet: if it completes, the consumer builds its response from data the
   * erasure already changed; if it is abandoned, the key answers 410 from then
   * on instead of running the erased request again (record-decision.ts).
   * Call it first in the erasure transaction: its first write is what makes
   * a concurrent claim conflict. Returns the ids of the records it erased
   * (for forgetCached, after the commit).
   */
  async eraseSubject(session: ClientSession, tenant: string, subject: string): Promise<string[]> {
    const now = this.clock.now();
    const digest = subjectDigest(tenant, subject);
    // First: the write every claim of this subject makes too, so a claim committing after this
    // transaction's snapshot conflicts with it instead of slipping past (SubjectLockRepository).
    await this.subjects.touchForErasure(session, digest, now);
    const records = await this.records.findForSubject(session, tenant, digest);
    for (const record of records) {
      await this.records.redact(session, record._id, record.response ? this.responses.erased(record) : null, now);
    }
    // Tombstones carry the fingerprint of a body that named the subject: gone with the records' link to it.
    // A record still in flight leaves none when it finishes (its fingerprint is erased now).
    await this.tombstones.deleteForSubject(session, digest);
    return records.map((record) => record._id);
  }
}
