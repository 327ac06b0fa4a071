import { Schema } from 'mongoose';
import { ENDPOINT_STATUSES, type WebhookEndpoint } from '../webhook-endpoint.js';

export const WEBHOOK_ENDPOINT_MODEL = 'WebhookEndpoint';

const SealedSchema = new Schema({ keyId: String, iv: Buffer, tag: Buffer, data: Buffer }, { _id: false });
const SecretSchema = new Schema(
  { sealed: { type: SealedSchema, required: true }, createdAt: { type: Date, required: true }, expiresAt: { type: Date, default: null } },
  { _id: false },
);

export const WebhookEndpointSchema = new Schema<WebhookEndpoint>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    url: { type: String, required: true },
    events: { type: [String], required: true },
    description: { type: String, default: null },
    status: { type: String, enum: ENDPOINT_STATUSES, required: true },
    disabledReason: { type: String, enum: ['manual', 'failing', null], default: null },
    disabledAt: { type: Date, default: null },
    failingSince: { type: Date, default: null },
    secrets: { type: [SecretSchema], required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'webhook_endpoints', versionKey: false, strict: 'throw', minimize: false },
);

// The dispatcher's read per event (a tenant's enabled endpoints) and the list, newest first.
WebhookEndpointSchema.index({ tenant: 1, status: 1 }, { name: 'tenant_status' });
WebhookEndpointSchema.index({ tenant: 1, createdAt: -1 }, { name: 'tenant_created' });
