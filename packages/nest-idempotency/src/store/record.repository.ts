import { Inject, Injectable } from '@nestjs/common';
import type { Collection } from 'mongodb';
import type { ClientSession, Model } from 'mongoose';
import { isDuplicateKey } from './mongo-errors.js';
import { deriveClaimId } from './claim-id.js';
import { LeaseLostError } from '../errors.js';
import type {
  Fingerprint,
  FinishedKey,
  IdempotencyRecord,
  Lease,
  RecordCancellation,
  RecordConflict,
  RecordLease,
  StoredResponseDoc,
} from '../protocol/record.js';
import { IDEMPOTENCY_RECORD_MODEL, modelToken } from './schemas.js';

/** Another request created or changed the record first; the caller re-reads it. */
export class RecordRaceLostError extends Error {
  constructor(readonly recordId: string) {
    super('Lost the race for an idempotency record');
    this.name = 'RecordRaceLostError';
  }
}

/** What an erasure writes over one record. */
export interface Redaction {
  recordId: string;
  fingerprint: Fingerprint;
  response: StoredResponseDoc | null;
}

/** What a restarted attempt takes from the request that restarts it. */
export type RestartedRequest = Pick<IdempotencyRecord, 'fingerprint' | 'subject'>;

export type NewRecord = Omit<IdempotencyRecord, 'response' | 'purgeAt' | 'recoveryPoint' | 'updatedAt' | 'lease' | 'conflict'>;

type LeaseSource = Pick<
  IdempotencyRecord,
  '_id' | 'attempt' | 'createdAt' | 'expiresAt' | 'recoveryPoint' | 'schemaVersion' | 'ttlSeconds'
>;

export function leaseOf(record: LeaseSource, lease: RecordLease): Lease {
  return {
    recordId: record._id,
    owner: lease.owner,
    attempt: record.attempt,
    claimId: deriveClaimId(record._id, record.createdAt, record.attempt),
    schemaVersion: record.schemaVersion,
    ttlSeconds: record.ttlSeconds,
    keyExpiresAt: record.expiresAt,
    recoveryPoint: record.recoveryPoint,
  };
}

/**
 * idempotency_records. Every write after the claim is a compare-and-set on
 * the lease owner: a worker that lost its lease changes nothing.
 *
 * The reads and writes every keyed request makes (the owner look-up, the
 * claim insert, the checkpoint, the finish) go to the driver's collection:
 * Mongoose's casting, validation and document hydration cost about as much
 * CPU as the round trip itself, and these documents are built here, typed.
 * The rarer paths (restart, takeover, release, erasure, the reaper's scans)
 * keep Mongoose.
 */
@Injectable()
export class IdempotencyRecordRepository {
  private readonly native: Collection<IdempotencyRecord>;

  constructor(@Inject(modelToken(IDEMPOTENCY_RECORD_MODEL)) private readonly records: Model<IdempotencyRecord>) {
    this.native = records.collection as unknown as Collection<IdempotencyRecord>;
  }

  async insertPending(session: ClientSession, record: NewRecord, lease: RecordLease): Promise<Lease> {
    const doc = {
      ...record,
      lease: stored(lease),
      recoveryPoint: null,
      response: null,
      conflict: null,
      purgeAt: null,
      updatedAt: record.createdAt,
    };
    try {
      await this.native.insertOne(doc, { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new RecordRaceLostError(record._id);
      throw error;
    }
    return leaseOf(doc, lease);
  }

  findById(recordId: string): Promise<IdempotencyRecord | null> {
    return this.records.findById(recordId).lean<IdempotencyRecord>().exec();
  }

  /**
   * The record that owns a key, in one read by _id: the record under the
   * key's own id, else a live record under a versioned id of an earlier
   * release (`...:v{N}:{key}`, legacyScopeKeys). Such a record still owns its
   * key until it finishes and expires, so a retry straddling the upgrade is
   * answered from it, never executed twice. Nothing writes such ids any more;
   * drop them from the look-up one retention period after the last instance
   * of an earlier release stopped.
   */
  async findOwner(recordId: string, legacyIds: string[], now: Date): Promise<IdempotencyRecord | null> {
    const records = await this.native.find({ _id: { $in: [recordId, ...legacyIds] } }).toArray();
    return records.find((record) => record._id === recordId) ?? legacyOwner(records, now);
  }

  /** The tenant's records for one client key (any operation, either id format), without stored bodies. */
  findByClientKey(tenant: string, clientKey: string): Promise<IdempotencyRecord[]> {
    return this.records.find({ tenant, clientKey }, { 'response.body': 0 }).sort({ createdAt: 1 }).lean<IdempotencyRecord[]>().exec();
  }

  /** A finished, expired record is replaced whole by a new claim (compare-and-set on what we read). */
  async replaceExpired(session: ClientSession, old: IdempotencyRecord, record: NewRecord, lease: RecordLease): Promise<Lease> {
    const doc = { ...record, lease, recoveryPoint: null, response: null, conflict: null, purgeAt: null, updatedAt: record.createdAt };
    const result = await this.records.replaceOne(
      { _id: old._id, createdAt: old.createdAt, status: old.status, attempt: old.attempt, expiresAt: old.expiresAt },
      doc,
      { session },
    );
    if (result.matchedCount !== 1) throw new RecordRaceLostError(old._id);
    return leaseOf(doc, lease);
  }

  /**
   * An abandoned attempt (failed, no stored response) starts over with
   * attempt + 1. The filter names the incarnation (createdAt): after expiry
   * a record is replaced in place with attempt 1 again, and a restart decided
   * on the old one must not revive the new one. The lease comes from the
   * updated document, so its claim id is the one every later takeover derives.
   */
  async restart(session: ClientSession, old: IdempotencyRecord, lease: RecordLease, request: RestartedRequest): Promise<Lease> {
    const updated = await this.records
      .findOneAndUpdate(
        { _id: old._id, createdAt: old.createdAt, status: 'failed', response: null, attempt: old.attempt },
        {
          // The request's fingerprint and subject again: an erasure may have removed them from the old attempt.
          $set: {
            status: 'pending',
            attempt: old.attempt + 1,
            lease,
            ...request,
            recoveryPoint: null,
            purgeAt: null,
            finishedAt: null,
            updatedAt: lease.lockedAt,
          },
        },
        { session, returnDocument: 'after' },
      )
      .lean<IdempotencyRecord>()
      .exec();
    if (!updated) throw new RecordRaceLostError(old._id);
    return leaseOf(updated, lease);
  }

  /**
   * Takes an expired lease on a pending record; null when someone else got
   * there first. The reaper passes `outsideResumeWindow`: a record released
   * into its resume window after the reaper listed it is its client's to
   * resume (same order, same charge key), not the reaper's to abandon.
   */
  async takeOver(old: IdempotencyRecord, lease: RecordLease, options: { outsideResumeWindow?: boolean } = {}): Promise<Lease | null> {
    if (!old.lease) return null;
    const window = options.outsideResumeWindow
      ? { $or: [{ 'lease.resumableUntil': null }, { 'lease.resumableUntil': { $lte: lease.lockedAt } }] }
      : {};
    const updated = await this.records
      .findOneAndUpdate(
        {
          _id: old._id,
          status: 'pending',
          attempt: old.attempt,
          'lease.owner': old.lease.owner,
          'lease.expiresAt': { $lte: lease.lockedAt },
          ...window,
        },
        { $set: { lease, updatedAt: lease.lockedAt } },
        { returnDocument: 'after' },
      )
      .lean<IdempotencyRecord>()
      .exec();
    return updated ? leaseOf(updated, lease) : null;
  }

  /** Records the consumer's progress and renews the lease, inside the consumer's transaction. */
  async checkpoint(session: ClientSession, lease: Lease, recoveryPoint: string, renewed: RecordLease): Promise<void> {
    const result = await this.native.updateOne(
      { _id: lease.recordId, status: 'pending', 'lease.owner': lease.owner },
      { $set: { recoveryPoint, lease: stored(renewed), updatedAt: renewed.lockedAt } },
      { session },
    );
    if (result.matchedCount !== 1) throw new LeaseLostError(lease.recordId);
  }

  /**
   * Final write of an attempt: complete or failed, with or without a response
   * to replay. Returns what the key's tombstone needs, read in the same write
   * (an erasure may have changed the fingerprint and subject since the claim).
   */
  async finish(
    session: ClientSession,
    lease: Lease,
    status: 'complete' | 'failed',
    recoveryPoint: string,
    response: StoredResponseDoc | null,
    now: Date,
    retainUntil: Date,
  ): Promise<FinishedKey> {
    const finished = await this.native.findOneAndUpdate(
      { _id: lease.recordId, status: 'pending', 'lease.owner': lease.owner },
      {
        $set: {
          status,
          recoveryPoint,
          response,
          lease: null,
          conflict: null,
          updatedAt: now,
          finishedAt: now,
          expiresAt: retainUntil,
          purgeAt: retainUntil,
        },
      },
      { session, returnDocument: 'after', projection: { tenant: 1, operation: 1, clientKey: 1, fingerprint: 1, subject: 1 } },
    );
    if (!finished) throw new LeaseLostError(lease.recordId);
    return finished;
  }

  /** Notes what stopped this attempt for the admin API (and the reaper, which then leaves the record to a human). */
  async noteConflict(lease: Lease, conflict: RecordConflict): Promise<boolean> {
    const result = await this.records.updateOne(
      { _id: lease.recordId, status: 'pending', 'lease.owner': lease.owner },
      { $set: { conflict, updatedAt: conflict.at } },
    );
    return result.matchedCount === 1;
  }

  /**
   * Gives the lease up early: the next retry may take over at once. With
   * resumableUntil (a transient failure) the reaper leaves the record to that
   * retry until then; without it (the reaper's own failed pass) it is reaped again next pass.
   */
  async release(lease: Lease, now: Date, resumableUntil: Date | null = null): Promise<boolean> {
    const result = await this.records.updateOne(
      { _id: lease.recordId, status: 'pending', 'lease.owner': lease.owner },
      { $set: { 'lease.expiresAt': now, 'lease.resumableUntil': resumableUntil, updatedAt: now } },
    );
    return result.matchedCount === 1;
  }

  /** Deletes a pending record while `lease` holds it: a claim withdrawn before any work ran. */
  async withdraw(lease: Lease, session?: ClientSession): Promise<boolean> {
    const result = await this.native.deleteOne({ _id: lease.recordId, status: 'pending', 'lease.owner': lease.owner }, { session });
    return result.deletedCount === 1;
  }

  /** The subject's records (any of its digest forms), without the stored bodies an erasure replaces anyway. */
  findForSubject(session: ClientSession | undefined, tenant: string, subjects: string[]): Promise<IdempotencyRecord[]> {
    return this.native.find({ tenant, subject: { $in: subjects } }, { session, projection: { 'response.body': 0 } }).toArray();
  }

  /**
   * Erasure, in one round trip: each stored response is replaced, and each
   * record keeps nothing its subject could be found or guessed from - no
   * subject digest, only a keyed fingerprint of the body that named them.
   */
  async redactAll(session: ClientSession, redactions: Redaction[], now: Date): Promise<void> {
    if (redactions.length === 0) return;
    await this.native.bulkWrite(
      redactions.map(({ recordId, fingerprint, response }) => {
        const erased = { subject: null, fingerprint, updatedAt: now };
        return { updateOne: { filter: { _id: recordId }, update: { $set: response ? { ...erased, response } : erased } } };
      }),
      { session, ordered: true },
    );
  }

  /**
   * Pending records of these operations whose lease ran out, oldest lease
   * first: the reaper's work list. Records with a noted conflict are left to
   * a human (retrying cannot resolve them; their age still raises the
   * pending-stuck alert).
   */
  findStale(operations: string[], now: Date, limit: number): Promise<IdempotencyRecord[]> {
    return this.records
      .find({
        status: 'pending',
        'lease.expiresAt': { $lte: now },
        operation: { $in: operations },
        conflict: null,
        // A cancel of the key is under way: the cancel owns the record (repeating it finishes it), never the reaper.
        cancellation: null,
        // Released after a transient failure: its client's retry resumes it until the window ends.
        // Both branches are ranges of reaper_window_scan: records inside their window are never read.
        $or: [{ 'lease.resumableUntil': null }, { 'lease.resumableUntil': { $lte: now } }],
      })
      .sort({ 'lease.expiresAt': 1 })
      .limit(limit)
      .lean<IdempotencyRecord[]>()
      .exec();
  }

  /**
   * The oldest pending record the reaper should have dealt with: one left to
   * its client inside a resume window is expected to be pending, and would
   * otherwise trip IdempotencyPendingStuck through every provider outage.
   */
  async oldestPendingCreatedAt(now: Date): Promise<Date | null> {
    const oldest = await this.records
      .findOne({ status: 'pending', $or: [{ 'lease.resumableUntil': null }, { 'lease.resumableUntil': { $lte: now } }] }, { createdAt: 1 })
      .sort({ createdAt: 1 })
      .lean<Pick<IdempotencyRecord, 'createdAt'>>()
      .exec();
    return oldest?.createdAt ?? null;
  }

  // Cancel by key (IdempotencyCancellation)

  /** A key that never ran, canceled: a record born `canceled`, so no claim can ever insert its id. */
  async insertCanceled(session: ClientSession, record: IdempotencyRecord): Promise<void> {
    try {
      await this.native.insertOne(record, { session });
    } catch (error) {
      if (isDuplicateKey(error)) throw new RecordRaceLostError(record._id);
      throw error;
    }
  }

  /**
   * The cancel's first write, a compare-and-set on the record as read: from
   * it on the key answers 409 idempotency_key_canceled. A pending record's
   * lease is taken by force in the same write (`lease`): its worker is
   * fenced by the lease check that is the first write of each of its
   * transactions, and the cancel's canceler drives the attempt instead.
   */
  async requestCancel(
    session: ClientSession,
    old: IdempotencyRecord,
    cancellation: RecordCancellation,
    lease: RecordLease | null,
  ): Promise<IdempotencyRecord> {
    const filter: Record<string, unknown> = {
      _id: old._id,
      createdAt: old.createdAt,
      attempt: old.attempt,
      status: old.status,
      cancellation: null,
    };
    if (old.status === 'pending') filter['lease.owner'] = old.lease?.owner ?? null;
    const set: Record<string, unknown> = { cancellation, updatedAt: cancellation.requestedAt };
    if (lease) set.lease = stored(lease);
    const updated = await this.native.findOneAndUpdate(filter, { $set: set }, { session, returnDocument: 'after' });
    if (!updated) throw new RecordRaceLostError(old._id);
    return updated;
  }

  /**
   * The cancel's last write: the record, final (its attempt finished or
   * never begun) and marked by this cancel, becomes `canceled` and is kept
   * until `retainUntil` (record TTL + tombstone period).
   */
  async finishCancel(
    session: ClientSession,
    old: IdempotencyRecord,
    cancellation: RecordCancellation,
    retainUntil: Date,
  ): Promise<IdempotencyRecord> {
    const updated = await this.native.findOneAndUpdate(
      {
        _id: old._id,
        createdAt: old.createdAt,
        attempt: old.attempt,
        status: old.status,
        'cancellation.requestedAt': old.cancellation?.requestedAt ?? null,
      },
      {
        $set: {
          status: 'canceled',
          cancellation,
          lease: null,
          updatedAt: cancellation.canceledAt!,
          expiresAt: retainUntil,
          purgeAt: retainUntil,
        },
      },
      { session, returnDocument: 'after', projection: { 'response.body': 0 } },
    );
    if (!updated) throw new RecordRaceLostError(old._id);
    return updated;
  }
}

/** The live record of an earlier release's id format, newest schema version first. */
function legacyOwner(records: IdempotencyRecord[], now: Date): IdempotencyRecord | null {
  const live = records.filter((record) => record.status === 'pending' || record.expiresAt.getTime() > now.getTime());
  return live.reduce<IdempotencyRecord | null>(
    (best, record) => (best && best.schemaVersion >= record.schemaVersion ? best : record),
    null,
  );
}

/** A lease as stored: resumableUntil present (null), as the schema's default wrote it when Mongoose did the writes. */
function stored(lease: RecordLease): RecordLease {
  return { ...lease, resumableUntil: lease.resumableUntil ?? null };
}
