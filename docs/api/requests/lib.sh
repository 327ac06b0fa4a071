# Shared by the request scripts of docs/api/: one function, `req`, that sends a
# request with curl, prints it and its answer, and stops the script when the
# answer is not the one the docs show. Needs bash, curl and node (any Node the
# service runs on). Settings, all optional:
#   BASE_URL  the service (default http://localhost:3000, what `npm start` serves)
#   TOKEN     an API key with the scopes orders+admin (default: the dev tenant's)
#   RUN       a prefix that makes this run's Idempotency-Keys new (default: time + pid)
set -euo pipefail
BASE_URL=${BASE_URL:-http://localhost:3000}
TOKEN=${TOKEN:-dev-secret-change-me}
RUN=${RUN:-$(date +%s)-$$}
REQUESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ANSWER=$(mktemp)
HEADERS=$(mktemp)
trap 'rm -f "$ANSWER" "$HEADERS"' EXIT

# req STATUS [field=value | header:name=value ...] -- METHOD PATH [curl arguments ...]
#   field paths are dotted (data.0.state); values compare as text ("null" matches null).
#   The Authorization header is added unless the curl arguments carry --no-auth first.
req() {
  local expected=$1 checks=() auth=(-H "Authorization: Bearer $TOKEN")
  shift
  while [ "$1" != "--" ]; do checks+=("$1"); shift; done
  shift
  local method=$1 path=$2
  shift 2
  if [ "${1:-}" = "--no-auth" ]; then auth=(); shift; fi
  echo "> $method $path"
  local status
  status=$(curl -sS -o "$ANSWER" -D "$HEADERS" -w '%{http_code}' -X "$method" "$BASE_URL$path" "${auth[@]}" "$@")
  echo "< $status $(head -c 400 "$ANSWER")"
  node "$REQUESTS_DIR/check.mjs" "$expected" "$status" "$ANSWER" "$HEADERS" "${checks[@]}"
}

# field PATH: a field of the last answer (e.g. ORDER=$(field id)).
field() {
  node -e 'const v = process.argv[2].split(".").reduce((o, k) => o?.[k], JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))); process.stdout.write(String(v))' "$ANSWER" "$1"
}

# signed BODY: fills WEBHOOK_HEADERS with the three Standard Webhooks headers for BODY as curl
# arguments, signed by scripts/sign-webhook.mjs (WEBHOOK_SECRETS, else the dev secret).
signed() {
  WEBHOOK_HEADERS=()
  local line
  while IFS= read -r line; do WEBHOOK_HEADERS+=(-H "$line"); done < <(node "$REQUESTS_DIR/../../../scripts/sign-webhook.mjs" "$1")
}

# cmd EXIT [field=value ...] -- COMMAND ...: a command instead of a request (the reconcile CLI):
# its exit code stands for the status, its JSON output for the body.
cmd() {
  local expected=$1 checks=()
  shift
  while [ "$1" != "--" ]; do checks+=("$1"); shift; done
  shift
  echo "> $*"
  local code=0
  "$@" > "$ANSWER" || code=$?
  : > "$HEADERS"
  echo "< exit $code $(head -c 400 "$ANSWER")"
  node "$REQUESTS_DIR/check.mjs" "$expected" "$code" "$ANSWER" "$HEADERS" "${checks[@]}"
}
