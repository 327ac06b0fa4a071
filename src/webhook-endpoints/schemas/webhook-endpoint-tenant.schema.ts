import { Schema } from 'mongoose';

export const WEBHOOK_ENDPOINT_TENANT_MODEL = 'WebhookEndpointTenant';

/**
 * One per tenant that has created an endpoint: every create writes it before
 * it counts the tenant's endpoints (WebhookEndpointRepository.countForCreate).
 */
export interface WebhookEndpointTenant {
  /** The tenant. */
  _id: string;
  lastCreateAt: Date;
}

export const WebhookEndpointTenantSchema = new Schema<WebhookEndpointTenant>(
  {
    _id: { type: String, required: true },
    lastCreateAt: { type: Date, required: true },
  },
  { collection: 'webhook_endpoint_tenants', versionKey: false, strict: 'throw' },
);
