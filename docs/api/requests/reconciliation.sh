#!/usr/bin/env bash
# docs/api/reconciliation.md, runnable: pay an order, refund part of it, then reconcile today's
# ledger against the provider's statement with the CLI. MONGODB_URI: the store the service uses
# (the boot banner's Store line; with `npm run store`, .data/embedded-store.json holds it).
source "$(dirname "$0")/lib.sh"
: "${MONGODB_URI:?set MONGODB_URI to the store the service uses (the Store line of its boot banner)}"
req 201 state=saved -- \
  POST /v1/orders -H "Idempotency-Key: $RUN-books" -H 'Content-Type: application/json' \
  -d '{"customerId":"cus_123","currency":"USD","items":[{"sku":"sku_1","quantity":1,"unitPriceMinor":7000}],"paymentMethod":{"token":"tok_visa"}}'
ORDER=$(field id)
req 201 state=succeeded -- \
  POST "/v1/orders/$ORDER/refunds" -H "Idempotency-Key: $RUN-books-refund" -H 'Content-Type: application/json' \
  -d '{"amountMinor":2000,"reason":"requested_by_customer"}'

# Today, [from, to) in UTC: JSON on stdout, exit 0 when the books match (1 on mismatches).
FROM=$(node -p 'new Date().toISOString().slice(0, 10)')
TO=$(node -p 'new Date(Date.now() + 864e5).toISOString().slice(0, 10)')
cmd 0 mismatches=[] -- npm run --silent reconcile -- --from "$FROM" --to "$TO"
echo "reconciliation.sh: every answer as documented"
