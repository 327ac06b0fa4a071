#!/usr/bin/env bash
# docs/api/capture-void.md, runnable: authorize, capture part of it, void another authorization.
source "$(dirname "$0")/lib.sh"
manual_order() {
  req 201 state=authorized authorizedMinor=2500 capturedMinor=0 -- \
    POST /v1/orders -H "Idempotency-Key: $RUN-$1" -H 'Content-Type: application/json' \
    -d '{"customerId":"cus_123","currency":"USD","capture":"manual","items":[{"sku":"sku_1","quantity":2,"unitPriceMinor":1250}],"paymentMethod":{"token":"tok_visa"}}'
}

# Authorize only: 201, the order authorized, nothing captured yet.
manual_order auth-1
ORDER=$(field id)

# More than the authorization: 422, nothing taken.
req 422 code=capture_exceeds_authorized -- \
  POST "/v1/orders/$ORDER/capture" -H "Idempotency-Key: $RUN-capture-0" -H 'Content-Type: application/json' -d '{"amountMinor":99999}'

# Capture 1000 of the 2500: 200, the order captured.
req 200 state=captured capturedMinor=1000 -- \
  POST "/v1/orders/$ORDER/capture" -H "Idempotency-Key: $RUN-capture-1" -H 'Content-Type: application/json' -d '{"amountMinor":1000}'

# Its retry: the same answer, replayed; a second capture (new key): 409.
req 200 state=captured header:idempotent-replayed=true -- \
  POST "/v1/orders/$ORDER/capture" -H "Idempotency-Key: $RUN-capture-1" -H 'Content-Type: application/json' -d '{"amountMinor":1000}'
req 409 code=order_not_capturable -- \
  POST "/v1/orders/$ORDER/capture" -H "Idempotency-Key: $RUN-capture-2"

# Void another authorization (no body): 200, the hold released.
manual_order auth-2
ORDER2=$(field id)
req 200 state=voided -- POST "/v1/orders/$ORDER2/void" -H "Idempotency-Key: $RUN-void-1"

# Without a key: 400.
req 400 code=idempotency_key_missing -- POST "/v1/orders/$ORDER2/void"
echo "capture-void.sh: every answer as documented"
