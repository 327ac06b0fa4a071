import { Schema } from 'mongoose';
import type { Tombstone } from '../tombstone.js';

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
