/**
 * The one table from domain error code to HTTP status. Services throw
 * DomainErrors with a code; only this table and the filter know about HTTP.
 * The idempotency package's errors carry their status (IdempotencyError.status).
 */
export const ERROR_STATUS: Record<string, number> = {
  unauthorized: 401,
  insufficient_scope: 403,
  validation_failed: 400,
  malformed_json: 400,
  json_too_deep: 400,
  json_too_many_values: 400,
  json_not_i_json: 400,
  response_erased: 410,
  invalid_customer_id: 400,
  order_not_found: 404,
  invalid_cursor: 400,
  amount_out_of_range: 422,
  card_declined: 402,
  payment_provider_unavailable: 503,
  store_unavailable: 503,
  rate_limited: 429,
};
