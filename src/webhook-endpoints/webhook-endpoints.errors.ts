import { DomainError } from '../common/domain-error.js';

/** No such endpoint for the caller's tenant (another tenant's endpoint is this too). */
export class WebhookEndpointNotFoundError extends DomainError {
  readonly code = 'webhook_endpoint_not_found';
  constructor() {
    super('No webhook endpoint with this id for your account.');
  }
}

export class WebhookDeliveryNotFoundError extends DomainError {
  readonly code = 'webhook_delivery_not_found';
  constructor() {
    super('No delivery of this event to this endpoint for your account.');
  }
}

/** The tenant has as many endpoints as it may (OUTGOING_WEBHOOKS_MAX_ENDPOINTS_PER_TENANT): delete one first. */
export class WebhookEndpointLimitError extends DomainError {
  readonly code = 'webhook_endpoint_limit';
  constructor(limit: number) {
    super(`Your account has ${limit} webhook endpoints, the most it may have; delete one before adding another.`);
    this.extensions = { limit };
  }
}

/** The URL may not receive webhooks: not https in production, credentials in it, or an address we never reach (SSRF). */
export class WebhookUrlRefusedError extends DomainError {
  readonly code = 'webhook_url_refused';
  constructor(reason: string) {
    super(`This URL cannot receive webhooks: ${reason}.`);
    this.extensions = { reason };
  }
}
