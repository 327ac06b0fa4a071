import { Schema } from 'mongoose';
import { DELIVERY_STATUSES, type WebhookDelivery } from '../webhook-endpoint.js';

export const WEBHOOK_DELIVERY_MODEL = 'WebhookDelivery';

const AttemptSchema = new Schema(
  {
    at: { type: Date, required: true },
    httpStatus: { type: Number, default: null },
    durationMs: { type: Number, required: true },
    error: { type: String, default: null },
  },
  { _id: false },
);

export const WebhookDeliverySchema = new Schema<WebhookDelivery>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    endpointId: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    payload: { type: String, required: true },
    subject: { type: String },
    status: { type: String, enum: DELIVERY_STATUSES, required: true },
    attempts: { type: [AttemptSchema], default: [] },
    scheduleIndex: { type: Number, required: true },
    nextAttemptAt: { type: Date, default: null },
    lease: { type: new Schema({ owner: String, until: Date }, { _id: false }), default: null },
    retryRequested: { type: Boolean, default: false },
    expiresAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'webhook_deliveries', versionKey: false, strict: 'throw', minimize: false },
);

// The worker's scan: pending deliveries by due time.
WebhookDeliverySchema.index({ status: 1, nextAttemptAt: 1 }, { name: 'due' });
// Retention: an ended delivery goes OUTGOING_WEBHOOKS_RETENTION_DAYS after its last attempt; a pending one
// (expiresAt null, which a TTL index skips) stays until it ends, so no event is dropped unsent.
WebhookDeliverySchema.index({ expiresAt: 1 }, { name: 'retention', expireAfterSeconds: 0 });
// An erasure: the deliveries naming its customer, and those recorded before `subject` existed (null here).
WebhookDeliverySchema.index({ tenant: 1, subject: 1 }, { name: 'tenant_subject' });
// GET /v1/webhook-endpoints/:id/deliveries, newest first.
WebhookDeliverySchema.index({ tenant: 1, endpointId: 1, createdAt: -1 }, { name: 'endpoint_deliveries' });
