import { Schema } from 'mongoose';

export const SUBJECT_LOCK_MODEL = 'IdempotencySubjectLock';

/** Per data subject (its digest) a few stripes, written by its claims and erasures (SubjectLockRepository). */
export interface SubjectLock {
  _id: string;
  updatedAt: Date;
}

export const SubjectLockSchema = new Schema<SubjectLock>(
  {
    _id: { type: String, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'idempotency_subjects', versionKey: false, strict: 'throw' },
);
