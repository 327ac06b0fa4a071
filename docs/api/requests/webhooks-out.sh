#!/usr/bin/env bash
# docs/api/webhooks-out.md, runnable: register an endpoint, replay the registration, rotate its secret, read it back.
source "$(dirname "$0")/lib.sh"
# Port 9 (discard) on this host: nothing answers, so deliveries to it fail and are retried; it is deleted at the end.
# Loopback is accepted only outside production (OUTGOING_WEBHOOKS_ALLOW_PRIVATE); production wants https.
req 201 status=enabled events.0=order.completed events.1=order.refunded -- \
  POST /v1/webhook-endpoints -H "Idempotency-Key: $RUN-endpoint" -H 'Content-Type: application/json' \
  -d '{"url":"http://127.0.0.1:9/webhooks","events":["order.completed","order.refunded"],"description":"Fulfilment"}'
ENDPOINT=$(field id)
SECRET=$(field secret)

# Its retry: the same endpoint and the same secret, replayed; no second endpoint.
req 201 id="$ENDPOINT" secret="$SECRET" header:idempotent-replayed=true -- \
  POST /v1/webhook-endpoints -H "Idempotency-Key: $RUN-endpoint" -H 'Content-Type: application/json' \
  -d '{"url":"http://127.0.0.1:9/webhooks","events":["order.completed","order.refunded"],"description":"Fulfilment"}'

# A URL that is not http(s): 422, nothing stored.
req 422 code=webhook_url_refused -- \
  POST /v1/webhook-endpoints -H "Idempotency-Key: $RUN-endpoint-ftp" -H 'Content-Type: application/json' \
  -d '{"url":"ftp://127.0.0.1/webhooks","events":["order.completed"]}'

# Read it back: never the secret.
req 200 id="$ENDPOINT" url=http://127.0.0.1:9/webhooks secret=undefined -- GET "/v1/webhook-endpoints/$ENDPOINT"

# A new secret; the previous one keeps signing for 24 hours.
req 200 id="$ENDPOINT" -- POST "/v1/webhook-endpoints/$ENDPOINT/rotate-secret" -H "Idempotency-Key: $RUN-rotate"

# Only order.completed from now on, and paused.
req 200 status=disabled disabledReason=manual events.0=order.completed -- \
  PATCH "/v1/webhook-endpoints/$ENDPOINT" -H 'Content-Type: application/json' -d '{"events":["order.completed"],"enabled":false}'

# What was sent to it, per event: status and every attempt.
req 200 -- GET "/v1/webhook-endpoints/$ENDPOINT/deliveries"

req 200 deleted=true -- DELETE "/v1/webhook-endpoints/$ENDPOINT"
req 404 code=webhook_endpoint_not_found -- GET "/v1/webhook-endpoints/$ENDPOINT"
echo "webhooks-out.sh: every answer as documented"
