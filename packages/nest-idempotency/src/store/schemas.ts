import { Schema } from 'mongoose';
import type { IdempotencyRecord, Tombstone } from '../protocol/record.js';

export const IDEMPOTENCY_RECORD_MODEL = 'IdempotencyRecord';

const LeaseSchema = new Schema(
  {
    owner: { type: String, required: true },
    lockedAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
    resumableUntil: { type: Date, default: null },
  },
  { _id: false },
);

const SealedBodySchema = new Schema({ keyId: String, iv: Buffer, tag: Buffer, data: Buffer }, { _id: false });

const ResponseSchema = new Schema(
  {
    status: { type: Number, required: true },
    headers: { type: Schema.Types.Mixed, default: {} },
    body: { type: SealedBodySchema, required: true },
    schemaVersion: { type: Number, required: true },
  },
  { _id: false },
);

export const IdempotencyRecordSchema = new Schema<IdempotencyRecord>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    operation: { type: String, required: true },
    clientKey: { type: String, required: true },
    status: { type: String, enum: ['pending', 'complete', 'failed', 'canceled'], required: true },
    fingerprint: {
      type: new Schema({ algorithm: String, value: String }, { _id: false }),
      required: true,
    },
    schemaVersion: { type: Number, required: true },
    ttlSeconds: { type: Number, required: true },
    attempt: { type: Number, required: true },
    lease: { type: LeaseSchema, default: null },
    recoveryPoint: { type: String, default: null },
    subject: { type: String, default: null },
    response: { type: ResponseSchema, default: null },
    conflict: {
      type: new Schema(
        { what: { type: String, required: true }, detail: { type: String, default: null }, at: { type: Date, required: true } },
        { _id: false },
      ),
      default: null,
    },
    // A cancel of the key (IdempotencyCancellation); absent on records no cancel touched.
    cancellation: {
      type: new Schema(
        {
          requestedAt: { type: Date, required: true },
          canceledAt: { type: Date, default: null },
          outcome: { type: String, default: null },
          location: { type: String, default: null },
          references: { type: Schema.Types.Mixed, default: {} },
          stoppedInFlight: { type: Boolean, default: false },
        },
        { _id: false, minimize: false },
      ),
      default: undefined,
    },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    // Set when the attempt finishes (Idempotent-Original-Date); absent on records finished before it existed.
    finishedAt: { type: Date },
    expiresAt: { type: Date, required: true },
    purgeAt: { type: Date, default: null },
  },
  { collection: 'idempotency_records', versionKey: false, strict: 'throw' },
);

// Garbage collection only: expiry itself is enforced in code on every lookup.
IdempotencyRecordSchema.index({ purgeAt: 1 }, { expireAfterSeconds: 0, name: 'purge_ttl' });
// The reaper's scan: pending records whose lease ran out and whose resume window (if any) is over. The
// window is part of the key, so a record released into its window during a provider outage is never
// scanned (each branch of findStale's $or is an index range). Replaces `reaper_scan` ({status,
// lease.expiresAt}), which walked every released record on every pass; drop that one after upgrading.
IdempotencyRecordSchema.index({ status: 1, 'lease.resumableUntil': 1, 'lease.expiresAt': 1 }, { name: 'reaper_window_scan' });
// The oldest-pending gauge: an indexed sort, not an in-memory one on every reaper pass.
IdempotencyRecordSchema.index({ status: 1, createdAt: 1 }, { name: 'pending_age' });
// The tenant's admin look-up by client key.
IdempotencyRecordSchema.index({ tenant: 1, clientKey: 1 }, { name: 'tenant_client_key' });
// Erasure of one data subject's stored responses.
IdempotencyRecordSchema.index({ tenant: 1, subject: 1 }, { name: 'tenant_subject' });

export const IDEMPOTENCY_TOMBSTONE_MODEL = 'IdempotencyTombstone';

export const IdempotencyTombstoneSchema = new Schema<Tombstone>(
  {
    _id: { type: String, required: true },
    scope: { type: String, required: true },
    fingerprint: { type: new Schema({ algorithm: String, value: String }, { _id: false }), required: true },
    status: { type: Number, required: true },
    location: { type: String, default: null },
    finishedAt: { type: Date, required: true },
    subject: { type: String, default: null },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_tombstones', versionKey: false, strict: 'throw' },
);

// Garbage collection only: a lookup ignores a tombstone past expiresAt itself (decideLateRetry).
IdempotencyTombstoneSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'tombstone_ttl' });
// Erasure of one data subject's tombstones; most have a subject, so a plain index.
IdempotencyTombstoneSchema.index({ subject: 1 }, { name: 'tombstone_subject' });

export const SUBJECT_LOCK_MODEL = 'IdempotencySubjectLock';

/** Per data subject (its digest) a few stripes, written by its claims and erasures (SubjectLockRepository). */
export interface SubjectLock {
  _id: string;
  updatedAt: Date;
  /** The subject's last erasure: a request received before it never starts an attempt after it. */
  erasedAt?: Date | null;
  /**
   * When the stripe may go (TTL): a stripe is only a meeting point, and its
   * erasedAt matters only to requests received before that erasure, which
   * never outlive a retention period. Each write sets it a retention ahead.
   */
  expiresAt?: Date;
}

export const SubjectLockSchema = new Schema<SubjectLock>(
  {
    _id: { type: String, required: true },
    updatedAt: { type: Date, required: true },
    erasedAt: { type: Date, default: null },
    expiresAt: { type: Date },
  },
  { collection: 'idempotency_subjects', versionKey: false, strict: 'throw' },
);

SubjectLockSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'subject_ttl' });

export const DUPLICATE_GUARD_MODEL = 'IdempotencyDuplicateGuard';

/**
 * One body of one tenant's operation, remembered for the duplicate guard's
 * window (protocol/duplicate-guard.ts). The id is an HMAC of tenant,
 * operation and the request fingerprint: it names no body and no person.
 */
export interface DuplicateGuardEntry {
  _id: string;
  /** The record that claimed the body: its result is the earlier one a duplicate is pointed at. */
  recordId: string;
  tenant: string;
  operation: string;
  createdAt: Date;
  /** End of the window: past it the body may be sent again under a new key (also the TTL). */
  until: Date;
}

export const DuplicateGuardSchema = new Schema<DuplicateGuardEntry>(
  {
    _id: { type: String, required: true },
    recordId: { type: String, required: true },
    tenant: { type: String, required: true },
    operation: { type: String, required: true },
    createdAt: { type: Date, required: true },
    until: { type: Date, required: true },
  },
  { collection: 'idempotency_duplicate_guard', versionKey: false, strict: 'throw' },
);

// Garbage collection only: a claim treats an entry past `until` as absent itself.
DuplicateGuardSchema.index({ until: 1 }, { expireAfterSeconds: 0, name: 'duplicate_guard_ttl' });
// A withdrawn claim (simple mode, a body a pipe refused) deletes its record's entry by record id.
DuplicateGuardSchema.index({ recordId: 1 }, { name: 'duplicate_guard_record' });

/**
 * The package's own tokens of its models and connection, aliased in the
 * module to `@nestjs/mongoose`'s tokens on the connection the extras name
 * (decorators cannot know it: they run when the class is defined).
 */
export const IDEMPOTENCY_CONNECTION = Symbol('IDEMPOTENCY_CONNECTION');
export const modelToken = (model: string): string => `IdempotencyModel:${model}`;

/** The package's collections, for MongooseModule.forFeature (on the connection named in the module's extras). */
export const IDEMPOTENCY_MODELS = [
  { name: IDEMPOTENCY_RECORD_MODEL, schema: IdempotencyRecordSchema },
  { name: SUBJECT_LOCK_MODEL, schema: SubjectLockSchema },
  { name: IDEMPOTENCY_TOMBSTONE_MODEL, schema: IdempotencyTombstoneSchema },
  { name: DUPLICATE_GUARD_MODEL, schema: DuplicateGuardSchema },
];
