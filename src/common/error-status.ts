import { IDEMPOTENCY_PROBLEM_GUIDANCE, type ProblemGuidance } from '@idempotent-orders/nest-idempotency';

/** One code the app answers with: its status and what the client may do next. */
export interface AppProblem extends ProblemGuidance {
  status: number;
}

/** Refused before anything ran, and the same request would be refused again: fix it; any key is safe. */
const REFUSED = { retryable: false, reuseKey: false, newKeySafe: true } as const;
/**
 * Refused before the key was looked up, for credentials: the request may be
 * the retry of one that ran under this key, so a fixed request keeps it.
 */
const REFUSED_KEEP_KEY = { retryable: false, reuseKey: true, newKeySafe: false } as const;
/** Send the same request again with the same key after Retry-After: it may have run, or may be resumed. */
const retrySameKey = (retryAfterSeconds: number) => ({ retryable: true, reuseKey: true, newKeySafe: false, retryAfterSeconds }) as const;

/**
 * The app's problem codes, in one table: the HTTP status and the guidance
 * (`retryable`, `reuseKey`, `newKeySafe`; `retryAfterSeconds` is the
 * Retry-After sent when the error names none). The idempotency package's
 * codes carry their guidance in its own table (IDEMPOTENCY_PROBLEM_GUIDANCE)
 * and their status on the error; the app registers this table with the
 * package once, where it sets up the package (idempotency.setup.ts), so every
 * problem+json the app sends carries the three fields. Services throw
 * DomainErrors with a code; only this table and the filter know about HTTP.
 */
export const APP_PROBLEMS: Readonly<Record<string, AppProblem>> = {
  // Authentication and limits
  unauthorized: { status: 401, ...REFUSED_KEEP_KEY },
  insufficient_scope: { status: 403, ...REFUSED_KEEP_KEY },
  rate_limited: { status: 429, ...retrySameKey(1) },
  // The request itself: refused before any look-up or work
  validation_failed: { status: 400, ...REFUSED },
  malformed_json: { status: 400, ...REFUSED },
  json_too_deep: { status: 400, ...REFUSED },
  json_too_many_values: { status: 400, ...REFUSED },
  json_not_i_json: { status: 400, ...REFUSED },
  invalid_customer_id: { status: 400, ...REFUSED },
  invalid_cursor: { status: 400, ...REFUSED },
  // Computed before the key is claimed: no record, no order, no charge.
  amount_out_of_range: { status: 422, ...REFUSED },
  order_not_found: { status: 404, ...REFUSED },
  // Business outcomes and the provider
  // A stored outcome: a retry replays it; the failed order exists, so a new key is another order.
  card_declined: { status: 402, retryable: false, reuseKey: false, newKeySafe: false },
  // Capture and void (manual capture). Refused in the claim transaction: nothing written, any key is safe.
  order_not_capturable: { status: 409, ...REFUSED },
  order_not_voidable: { status: 409, ...REFUSED },
  capture_exceeds_authorized: { status: 422, ...REFUSED },
  // The provider refused a capture or void: stored and replayed; the order is as the refusal left it (expired, or still authorized).
  authorization_expired: { status: 422, retryable: false, reuseKey: false, newKeySafe: false },
  authorization_voided: { status: 409, retryable: false, reuseKey: false, newKeySafe: false },
  already_captured: { status: 409, retryable: false, reuseKey: false, newKeySafe: false },
  payment_operation_refused: { status: 422, retryable: false, reuseKey: false, newKeySafe: false },
  // Nothing stored; the same key resumes the same order with the same charge key.
  payment_provider_unavailable: { status: 503, ...retrySameKey(2) },
  // Cancel by key of an order whose money this deployment cannot give back yet (no refunds, no void): the key
  // stays held (409 for creates), nothing given back; the same cancel finishes once it can.
  cancel_undo_unavailable: { status: 501, retryable: false, reuseKey: false, newKeySafe: false },
  // The refund that undoes a canceled key's order was refused (provider declined, or the refund's rules): the key
  // stays held, nothing given back; a human looks at the order (the refund's own answer is in the problem).
  cancel_refund_refused: { status: 422, retryable: false, reuseKey: false, newKeySafe: false },
  // Money of the canceled key's order is still moving (a refund pending, or released into its resume window): the
  // cancel settles only on final money. The key stays held, nothing settled yet; repeat the same cancel.
  cancel_in_progress: { status: 409, ...retrySameKey(1) },
  // Refunds. Refused inside the claim transaction, which then aborts: nothing stored, the key unused.
  refund_exceeds_captured: { status: 422, ...REFUSED },
  order_not_refundable: { status: 409, ...REFUSED },
  refund_not_found: { status: 404, ...REFUSED },
  // A refund of what is left (cancel by key's) while another refund of the order is in flight: nothing written.
  refund_in_flight: { status: 409, ...retrySameKey(1) },
  // Stored outcomes of the provider: a retry replays them; the failed refund exists, so a new key is another refund.
  refund_declined: { status: 402, retryable: false, reuseKey: false, newKeySafe: false },
  refund_refused: { status: 422, retryable: false, reuseKey: false, newKeySafe: false },
  // Outgoing webhooks (src/webhook-endpoints): refused before the claim, nothing stored.
  webhook_endpoint_not_found: { status: 404, ...REFUSED },
  webhook_delivery_not_found: { status: 404, ...REFUSED },
  webhook_url_refused: { status: 422, ...REFUSED },
  // Found in the create's transaction and withdrawn with its claim: nothing ran, nothing stored.
  webhook_endpoint_limit: { status: 409, ...REFUSED },
  // Provider webhooks (no Idempotency-Key: the event id is the key). Refused before the inbox, nothing recorded;
  // the same delivery would be refused again, so a provider should not retry it as it is.
  webhook_signature_invalid: { status: 401, ...REFUSED },
  webhook_timestamp_out_of_tolerance: { status: 401, ...REFUSED },
  webhook_header_repeated: { status: 400, ...REFUSED },
  webhook_event_invalid: { status: 400, ...REFUSED },
  // The order has not recorded its charge yet: deliver the same event again later.
  webhook_not_ready: { status: 503, retryable: true, reuseKey: true, newKeySafe: false, retryAfterSeconds: 1 },
  // HTTP and framework refusals: the request never reached a handler
  not_found: { status: 404, ...REFUSED },
  method_not_allowed: { status: 405, ...REFUSED },
  payload_too_large: { status: 413, ...REFUSED },
  unsupported_media_type: { status: 415, ...REFUSED },
  invalid_content_length: { status: 400, ...REFUSED },
  malformed_request: { status: 400, ...REFUSED },
  malformed_url: { status: 400, ...REFUSED },
  uri_too_long: { status: 414, ...REFUSED },
  headers_too_large: { status: 431, ...REFUSED },
  // The request did not arrive whole in time: send it again as it was.
  request_timeout: { status: 408, ...retrySameKey(1) },
  // Health: readiness (no work, no key)
  not_ready: { status: 503, retryable: true, reuseKey: false, newKeySafe: true, retryAfterSeconds: 5 },
  // Anything unexpected: it may have failed after the work began; only the same key resumes it.
  internal_error: { status: 500, ...retrySameKey(1) },
  // The package's codes the app's own errors map too (their guidance is the package's).
  response_erased: { status: 410, ...IDEMPOTENCY_PROBLEM_GUIDANCE.response_erased },
  store_unavailable: { status: 503, ...IDEMPOTENCY_PROBLEM_GUIDANCE.store_unavailable },
};

/** Domain error code -> HTTP status (from APP_PROBLEMS). */
export const ERROR_STATUS: Record<string, number> = Object.fromEntries(
  Object.entries(APP_PROBLEMS).map(([code, { status }]) => [code, status]),
);
