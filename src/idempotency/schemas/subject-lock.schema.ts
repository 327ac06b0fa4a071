import { Schema } from 'mongoose';

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
