#!/usr/bin/env bash
# docs/api/reconciliation.md, runnable: pay an order, refund part of it, then reconcile today's
# ledger against the provider's statement with the CLI. The store: MONGODB_URI, else the shared
# embedded store of `npm run store` (its file, EMBEDDED_STORE_FILE, .data/embedded-store.json by default).
source "$(dirname "$0")/lib.sh"
if [ -z "${MONGODB_URI:-}" ]; then
  STORE_FILE="${EMBEDDED_STORE_FILE:-$(dirname "$0")/../../../.data/embedded-store.json}"
  MONGODB_URI=$(node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.kill(s.pid, 0); console.log(s.uri)' "$STORE_FILE" 2>/dev/null) || MONGODB_URI=
  export MONGODB_URI
fi
: "${MONGODB_URI:?no store found: run the service on the shared store (npm run store, then npm start), or set MONGODB_URI to the Store line of its boot banner}"
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
