#!/usr/bin/env bash
# docs/api/cancel-by-key.md, runnable: undo a charged order by its key, and cancel a key that never ran.
source "$(dirname "$0")/lib.sh"
req 201 state=saved -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-to-undo" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":4200}],"paymentMethod":{"token":"tok_visa"}}'
ORDER=$(field id)

# Cancel the key (scope admin): the charge is refunded in full.
req 200 status=canceled outcome=refunded orderId="$ORDER" -- POST "/v1/idempotency-keys/$RUN-to-undo/cancel"
# The same cancel again: the same answer, nothing refunded twice.
req 200 status=canceled outcome=refunded -- POST "/v1/idempotency-keys/$RUN-to-undo/cancel"
req 200 state=refunded refundedMinor=4200 -- GET "/v1/orders/$ORDER"
# From now on every request under the key is 409.
req 409 code=idempotency_key_canceled -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-to-undo" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":4200}],"paymentMethod":{"token":"tok_visa"}}'

# A key that never ran: canceled before it can ever run.
req 200 status=canceled outcome=never_run -- POST "/v1/idempotency-keys/$RUN-lost/cancel"
echo "cancel-by-key.sh: every answer as documented"
