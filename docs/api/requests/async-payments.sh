#!/usr/bin/env bash
# docs/api/async-payments.md, runnable: a 202 processing order, then the provider's webhook signed by hand.
source "$(dirname "$0")/lib.sh"
ASYNC_BODY='{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":3000}],"paymentMethod":{"token":"tok_async"}}'

# tok_async: 202, the order processing; the key's answer is that 202, replayed on a retry.
req 202 state=processing -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-async-1" -H 'Content-Type: application/json' -d "$ASYNC_BODY"
ORDER=$(field id)
req 202 state=processing header:idempotent-replayed=true -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-async-1" -H 'Content-Type: application/json' -d "$ASYNC_BODY"

# The provider declines it later: its charge.failed, signed by hand with scripts/sign-webhook.mjs
# (the secret the service verifies with). 200, applied: the order fails.
EVENT="{\"type\":\"charge.failed\",\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"data\":{\"chargeKey\":\"charge:$ORDER\",\"chargeId\":\"ch_demo$RANDOM\",\"amountMinor\":3000,\"currency\":\"USD\",\"sequence\":2,\"failureReason\":\"card_declined\"}}"
signed "$EVENT"
req 200 outcome=applied duplicate=false orderId="$ORDER" -- \
  POST /v1/webhooks/payments --no-auth "${WEBHOOK_HEADERS[@]}" -H 'Content-Type: application/json' -d "$EVENT"
# The same delivery again (same webhook-id), as providers redeliver: recorded before, applied once.
req 200 outcome=applied duplicate=true -- \
  POST /v1/webhooks/payments --no-auth "${WEBHOOK_HEADERS[@]}" -H 'Content-Type: application/json' -d "$EVENT"
req 200 state=failed failureReason=card_declined -- GET "/v1/orders/$ORDER"

# A tampered body (signed, then changed): 401, nothing recorded.
req 401 code=webhook_signature_invalid -- \
  POST /v1/webhooks/payments --no-auth "${WEBHOOK_HEADERS[@]}" -H 'Content-Type: application/json' -d "${EVENT/3000/1}"
echo "async-payments.sh: every answer as documented"
