import { Schema } from 'mongoose';

export const SUBJECT_LOCK_MODEL = 'IdempotencySubjectLock';

/** Per data subject (its digest) a few stripes, written by its claims and erasures (SubjectLockRepository). */
export interface SubjectLock {
  _id: string;
  updatedAt: Date;
  /** The subject's last erasure: a request received before it never starts an attempt after it. */
  erasedAt?: Date | null;
}

export const SubjectLockSchema = new Schema<SubjectLock>(
  {
    _id: { type: String, required: true },
    updatedAt: { type: Date, required: true },
    erasedAt: { type: Date, default: null },
  },
  { collection: 'idempotency_subjects', versionKey: false, strict: 'throw' },
);
