import { Schema } from 'mongoose';
import type { InboxEvent } from '../inbox-event.js';

export const INBOX_EVENT_MODEL = 'WebhookInboxEvent';

/** Kept this long after receipt: longer than any provider retries a delivery (Standard Webhooks providers: days). */
export const INBOX_RETENTION_SECONDS = 90 * 24 * 3600;

export const InboxEventSchema = new Schema<InboxEvent>(
  {
    // The event id is the unique key: a second delivery of it cannot be recorded, so it cannot be applied.
    _id: { type: String, required: true },
    type: { type: String, required: true },
    chargeKey: { type: String, default: null },
    sequence: { type: Number, default: null },
    occurredAt: { type: Date, required: true },
    receivedAt: { type: Date, required: true },
    outcome: { type: String, enum: ['applied', 'ignored', 'unknown_type'], required: true },
    reason: { type: String, default: null },
    orderId: { type: String, default: null },
    tenant: { type: String, default: null },
  },
  { collection: 'webhook_inbox', versionKey: false, strict: 'throw' },
);

// The latest applied event of a charge: an event older than it (lower sequence) is stale.
InboxEventSchema.index({ chargeKey: 1, sequence: -1 }, { name: 'charge_sequence' });
InboxEventSchema.index({ receivedAt: 1 }, { name: 'retention', expireAfterSeconds: INBOX_RETENTION_SECONDS });
