import { Schema } from 'mongoose';

export const SUBJECT_LOCK_MODEL = 'IdempotencySubjectLock';

/** One document per data subject (its digest), written by every claim and every erasure of that subject. */
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
