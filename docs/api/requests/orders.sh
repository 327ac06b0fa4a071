#!/usr/bin/env bash
# docs/api/orders.md, runnable: create an order, replay it, the refusals, read it back.
source "$(dirname "$0")/lib.sh"
ORDER_BODY='{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":2,"unitPriceMinor":1250}],"paymentMethod":{"token":"tok_visa"}}'

# Create and pay: 201, the order saved, 2500 minor units.
req 201 state=saved amountMinor=2500 capturedMinor=2500 failureReason=null -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-1" -H 'Content-Type: application/json' -d "$ORDER_BODY"
ORDER=$(field id)

# The same request again: the same answer, replayed, nothing charged twice.
req 201 id="$ORDER" header:idempotent-replayed=true -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-1" -H 'Content-Type: application/json' -d "$ORDER_BODY"

# The same key with another body: 422, the key is not reused for something else.
req 422 code=idempotency_key_reused newKeySafe=true -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-1" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_2","quantity":1,"unitPriceMinor":999}],"paymentMethod":{"token":"tok_visa"}}'

# No key: 400, nothing runs.
req 400 code=idempotency_key_missing -- \
  POST /v1/orders -H 'Content-Type: application/json' -d "$ORDER_BODY"

# A declined card: 402, stored - its replay is the same 402.
DECLINED='{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":500}],"paymentMethod":{"token":"tok_decline"}}'
req 402 code=card_declined -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-2" -H 'Content-Type: application/json' -d "$DECLINED"
req 402 code=card_declined header:idempotent-replayed=true -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-2" -H 'Content-Type: application/json' -d "$DECLINED"

# The provider down: 503 + Retry-After, nothing stored - a retry under the same key runs again.
req 503 code=payment_provider_unavailable retryable=true -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-order-3" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":500}],"paymentMethod":{"token":"tok_provider_down"}}'

# Read it back: the order, your orders, its ledger (two balanced lines for a capture).
req 200 id="$ORDER" state=saved -- GET "/v1/orders/$ORDER"
req 200 -- GET '/v1/orders?limit=2'
req 200 entries.0.journalId="jrn_$ORDER" entries.0.direction=debit -- GET "/v1/orders/$ORDER/ledger"

# What the key holds (scope admin): status complete, and where its order is.
req 200 header:location="/v1/orders/$ORDER" -- GET "/v1/idempotency-keys/$RUN-order-1"
echo "orders.sh: every answer as documented"
