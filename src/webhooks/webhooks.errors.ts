import { DomainError } from '../common/domain-error.js';

/** Missing headers, no signature that any current secret made, or a timestamp that does not parse: not from our provider. */
export class WebhookSignatureInvalidError extends DomainError {
  readonly code = 'webhook_signature_invalid';
  constructor(detail = 'The webhook signature does not verify with any current secret.') {
    super(detail);
  }
}

/** Signed, but too old or too new: a replay of a captured delivery, or a clock far off. */
export class WebhookTimestampOutOfToleranceError extends DomainError {
  readonly code = 'webhook_timestamp_out_of_tolerance';
  constructor(toleranceSeconds: number) {
    super(`The webhook-timestamp is more than ${toleranceSeconds} seconds from now.`);
  }
}

/** Signed and parsed, but not an event of the documented shape. */
export class WebhookEventInvalidError extends DomainError {
  readonly code = 'webhook_event_invalid';
  constructor(detail: string) {
    super(`The webhook event is not valid: ${detail}.`);
  }
}

/** Over WEBHOOK_BODY_LIMIT_BYTES: refused before the signature is computed over it. */
export class WebhookPayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large';
  constructor(limit: number) {
    super(`The webhook body is over ${limit} bytes.`);
  }
}

/**
 * The event is about an order whose own request has not recorded the
 * `processing` answer yet (the provider was faster than our commit): nothing
 * is written; the provider's retry applies it.
 */
export class WebhookNotReadyError extends DomainError {
  readonly code = 'webhook_not_ready';
  constructor(retryAfterSeconds: number) {
    super('The order this event is about is not ready for it yet; deliver it again later.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** webhook-id, -timestamp or -signature sent more than once: one delivery has one of each (Node would join the copies). */
export class WebhookHeaderRepeatedError extends DomainError {
  readonly code = 'webhook_header_repeated';
  constructor(name: string) {
    super(`The ${name} header is sent more than once.`);
  }
}

/** Too many refused deliveries from one source: refused before anything is read, until the window moves on. */
export class WebhookSourceRateLimitedError extends DomainError {
  readonly code = 'rate_limited';
  constructor(retryAfterSeconds: number) {
    super('Too many refused webhook deliveries from this source; retry later.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
