import { Schema } from 'mongoose';
import type { OutboxEvent } from '../outbox-event.js';

export const OUTBOX_EVENT_MODEL = 'OutboxEvent';

export const OutboxEventSchema = new Schema<OutboxEvent>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    type: { type: String, required: true },
    // Not required: events written before these fields existed are still read and published (see toPublishedEvent).
    aggregateId: { type: String },
    schemaVersion: { type: Number },
    sequence: { type: Number },
    payload: { type: Schema.Types.Mixed, required: true },
    status: { type: String, enum: ['pending', 'published'], required: true },
    attempts: { type: Number, required: true },
    availableAt: { type: Date, required: true },
    createdAt: { type: Date, required: true },
    publishedAt: { type: Date, default: null },
    lastError: { type: String, default: null },
    claim: { type: String },
  },
  { collection: 'outbox_events', versionKey: false, strict: 'throw', minimize: false },
);

OutboxEventSchema.index({ status: 1, availableAt: 1 }, { name: 'relay_scan' });
// The relay publishes only the oldest pending event of each aggregate: it asks for the pending ones of a batch's aggregates.
OutboxEventSchema.index({ aggregateId: 1, status: 1, sequence: 1 }, { name: 'aggregate_pending' });
// outbox_oldest_pending_age_seconds: the oldest pending event, without a scan of the published ones.
OutboxEventSchema.index({ status: 1, createdAt: 1 }, { name: 'pending_age' });
// Erasure pseudonymizes a customer's events inside its transaction: without this it scans the outbox.
OutboxEventSchema.index({ tenant: 1, 'payload.customerId': 1 }, { name: 'tenant_customer' });
// Published events are kept a week for consumers' replays and audits, then collected.
OutboxEventSchema.index({ publishedAt: 1 }, { expireAfterSeconds: 7 * 86400, name: 'published_ttl' });
