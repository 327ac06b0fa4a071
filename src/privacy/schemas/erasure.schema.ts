import { Schema } from 'mongoose';
import type { Erasure } from '../erasure.js';

export const ERASURE_MODEL = 'Erasure';

export const ErasureSchema = new Schema<Erasure>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    subjectHash: { type: String, required: true },
    pseudonym: { type: String, required: true },
    erasedAt: { type: Date, required: true },
    counts: { type: Schema.Types.Mixed, required: true },
    idempotencyRecordIds: { type: [String], default: [] },
  },
  { collection: 'erasures', versionKey: false, strict: 'throw' },
);

ErasureSchema.index({ tenant: 1, subjectHash: 1 }, { name: 'tenant_subject' });
