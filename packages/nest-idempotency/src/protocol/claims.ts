import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { IdempotencyClock } from '../ports.js';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { isWriteConflict } from '../store/mongo-errors.js';
import { TransactionRunner } from '../store/transaction-runner.js';
import { IdempotencyMetrics } from '../ports.js';
import { storedFingerprint } from './fingerprint.js';
import { DuplicateClaimError, SubjectErasedError } from '../errors.js';
import type { IdempotencyRecord, Lease, RecordLease } from './record.js';
import { IdempotencyRecordRepository, RecordRaceLostError, type NewRecord } from '../store/record.repository.js';
import { newLease } from './record.js';
import { SubjectDigests } from './ids.js';
import { SubjectLockRepository } from '../store/subject-lock.repository.js';
import type { IdempotentRequest, IdempotentWork } from './work.js';
import { DuplicateBodyHeld, DuplicateGuard } from './duplicate-guard.js';

/** How an attempt starts: on an absent key, after an abandoned attempt, or over a finished record past its retention. */
export type ClaimKind = 'new' | 'restart' | 'replace_expired';

/**
 * The transactions that start an attempt. Each writes the record first (the
 * compare-and-set that decides between racing requests), then the data
 * subject's lock document (so an erasure of that subject and this claim
 * conflict), then the consumer's first documents (work.begin).
 */
@Injectable()
export class IdempotencyClaims {
  private readonly logger = new Logger(IdempotencyClaims.name);

  constructor(
    private readonly records: IdempotencyRecordRepository,
    private readonly subjects: SubjectLockRepository,
    private readonly transactions: TransactionRunner,
    private readonly metrics: IdempotencyMetrics,
    private readonly clock: IdempotencyClock,
    private readonly digests: SubjectDigests,
    private readonly duplicates: DuplicateGuard,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly config: IdempotencySettings,
  ) {}

  /**
   * The new attempt's lease, or null when another request changed the record
   * first (re-read it). Throws SubjectErasedError, writing nothing, when the
   * request's data subject was erased after the request arrived: a request
   * that predates an erasure never stores the erased data (an erasure during
   * a long wait, or before a zombie's attempt is abandoned and retried). An
   * erasure in the very millisecond the request arrived counts as after it:
   * the clock cannot order the two, and the cost of erring this way is one
   * 410 whose retry is a new request; the other way, erased data kept.
   */
  async claim(
    kind: ClaimKind,
    recordId: string,
    old: IdempotencyRecord | null,
    request: IdempotentRequest,
    work: IdempotentWork,
  ): Promise<Lease | null> {
    const lease = this.newLease();
    try {
      return await this.metrics.timeStore('claim', () =>
        this.transactions.run(async (session) => {
          const claimed = await this.writeRecord(session, kind, recordId, old, request, lease);
          // An opted-in route: the same body held by another key in the window rolls this claim back (DuplicateBodyHeld).
          await this.duplicates.hold(session, request, claimed);
          if (request.subject) {
            const digest = this.digests.of(request.tenant, request.subject);
            const erasedAt = await this.subjects.touchForClaim(session, digest, lease.lockedAt, claimed.keyExpiresAt);
            if (erasedAt && erasedAt.getTime() >= request.receivedAt.getTime()) throw new SubjectErasedError();
          }
          await work.begin(session, claimed);
          return claimed;
        }),
      );
    } catch (error) {
      if (error instanceof DuplicateBodyHeld) return this.duplicates.refuse(error);
      if (this.lostRace(error, request.operation)) return null;
      throw error;
    }
  }

  /** Takes the expired lease of a pending record; null when someone else got there first. */
  takeOver(old: IdempotencyRecord): Promise<Lease | null> {
    return this.metrics.timeStore('take_over', () => this.records.takeOver(old, this.newLease()));
  }

  /** A unique backstop stopped a second business write: never expected, so counted (it pages) and logged. */
  private reportDuplicate(error: DuplicateClaimError, operation: string): void {
    this.metrics.duplicateCreation(operation);
    this.logger.error(error.message);
  }

  private writeRecord(
    session: ClientSession,
    kind: ClaimKind,
    recordId: string,
    old: IdempotencyRecord | null,
    request: IdempotentRequest,
    lease: RecordLease,
  ): Promise<Lease> {
    const fresh = this.newRecord(recordId, request);
    if (kind === 'new' || !old) return this.records.insertPending(session, fresh, lease);
    if (kind === 'replace_expired') return this.records.replaceExpired(session, old, fresh, lease);
    return this.records.restart(session, old, lease, { fingerprint: fresh.fingerprint, subject: fresh.subject });
  }

  /** Someone else claimed or changed the record first: go round and read theirs. */
  private lostRace(error: unknown, operation: string): boolean {
    if (error instanceof DuplicateClaimError) {
      this.reportDuplicate(error, operation);
      return true;
    }
    return error instanceof RecordRaceLostError || isWriteConflict(error);
  }

  private newRecord(recordId: string, request: IdempotentRequest): NewRecord {
    const now = this.clock.now();
    return {
      _id: recordId,
      tenant: request.tenant,
      operation: request.operation,
      clientKey: request.clientKey,
      status: 'pending',
      fingerprint: storedFingerprint(request.fingerprint),
      schemaVersion: request.schemaVersion,
      ttlSeconds: request.ttlSeconds,
      attempt: 1,
      subject: request.subject ? this.digests.of(request.tenant, request.subject) : null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + request.ttlSeconds * 1000),
    };
  }

  private newLease(): RecordLease {
    return newLease(this.clock.now(), this.config.lockTimeoutMs);
  }
}
