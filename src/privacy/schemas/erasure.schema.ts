import { Schema } from 'mongoose';
import type { Erasure } from '../erasure.js';

export const ERASURE_MODEL = 'Erasure';

/** How long an erasure's audit record is kept: it proves the erasure, and names nobody. */
export const ERASURE_AUDIT_SECONDS = 400 * 24 * 60 * 60;

export const ErasureSchema = new Schema<Erasure>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    subjectHash: { type: String, required: true },
    erasedAt: { type: Date, required: true },
    counts: { type: Schema.Types.Mixed, required: true },
    idempotencyRecordIds: { type: [String], default: [] },
    cacheGuardUntil: { type: Date, required: true },
    cacheInvalidatedAt: { type: Date, default: null },
  },
  { collection: 'erasures', versionKey: false, strict: 'throw' },
);

ErasureSchema.index({ tenant: 1, subjectHash: 1 }, { name: 'tenant_subject' });
// The sweep's work list: erasures whose Redis invalidation is still due (few; most are null for seconds).
ErasureSchema.index({ cacheInvalidatedAt: 1, erasedAt: 1 }, { name: 'cache_due' });
// The audit trail stops growing: an erasure's record is kept about 13 months, then purged.
ErasureSchema.index({ erasedAt: 1 }, { expireAfterSeconds: ERASURE_AUDIT_SECONDS, name: 'erasure_ttl' });
