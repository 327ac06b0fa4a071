#!/usr/bin/env bash
# docs/api/refunds.md, runnable: refund part of an order, too much, then the rest.
source "$(dirname "$0")/lib.sh"
req 201 state=saved -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-paid" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":2,"unitPriceMinor":1250}],"paymentMethod":{"token":"tok_visa"}}'
ORDER=$(field id)

# Refund 1000 of the 2500: 201, the refund succeeded; Location names it.
req 201 state=succeeded amountMinor=1000 reason=requested_by_customer -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-refund-1" -H 'Content-Type: application/json' \
  -d '{"amountMinor":1000,"reason":"requested_by_customer"}'
REFUND=$(field id)

# Its retry: the same refund, replayed; no second refund.
req 201 id="$REFUND" header:idempotent-replayed=true -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-refund-1" -H 'Content-Type: application/json' \
  -d '{"amountMinor":1000,"reason":"requested_by_customer"}'

# 2000 more: 422, only 1500 is left.
req 422 code=refund_exceeds_captured refundableMinor=1500 -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-refund-2" -H 'Content-Type: application/json' \
  -d '{"amountMinor":2000,"reason":"requested_by_customer"}'

# A reason outside the list: 400.
req 400 code=validation_failed -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-refund-3" -H 'Content-Type: application/json' \
  -d '{"amountMinor":100,"reason":"because"}'

# The rest: 201, and the order is refunded.
req 201 state=succeeded amountMinor=1500 -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-refund-4" -H 'Content-Type: application/json' \
  -d '{"amountMinor":1500,"reason":"duplicate"}'
req 200 state=refunded refundedMinor=2500 -- GET "/v1/orders/$ORDER"
req 200 data.0.id="$REFUND" -- GET "/v1/orders/$ORDER/refunds"
echo "refunds.sh: every answer as documented"
