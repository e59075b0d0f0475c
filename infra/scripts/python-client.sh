#!/usr/bin/env bash
# Runs the official Python SDK client (mcp 2.3, pinned) against the local gateway serving the
# shop app. Installs the client on first use at .venv (git-ignored; a link into the per-user tools
# cache, see lib.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
venv=$python_client_venv

ensure_python_client
[[ -n "${RELEVO_BIN_DIR:-}" ]] || "$root/infra/scripts/bins.sh"
work="$root/target/clients"
mkdir -p "$work"
rm -f "$work/store.db"*
port=$(free_port)
export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer.json"
RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/store.db" start_gateway "$port" "$work/gateway-python.log"
token() { "$root/target/debug/relevo-token" --tenant "$1" --sub "$2" --scopes "notes:read notes:write"; }
RELEVO_TOKEN=$(token acme alice) RELEVO_OTHER_TOKEN=$(token globex alice) \
  timeout 120 "$venv/bin/python" "$root/tests/clients/python_client.py" "http://127.0.0.1:$port/mcp"

# The shop through two gateway processes that share only the store and the keys: the round-robin
# proxy inside the client script sends the confirmed checkout retry (auto mode: the modern path) or
# the elicitation answer (legacy mode: a 2025-11-25 session) to the other process. Both use the
# proxy's URL as their canonical resource (token audience), as gateways behind one domain do.
stop_gateway
start_gateway_pair shop
RELEVO_TOKEN=$("$root/target/debug/relevo-token" --tenant acme --sub alice --scopes shop) \
  timeout 120 "$venv/bin/python" "$root/tests/clients/python_shop.py" \
  "http://127.0.0.1:$first/mcp" "http://127.0.0.1:$second/mcp" "$proxy_port"

# The same client against the real function binaries (local Lambda mode, DynamoDB/SQS on moto).
if [[ -n "${RELEVO_TEST_AWS_ENDPOINT:-}" ]]; then
  kill "$first_pid" 2>/dev/null || true
  stop_gateway
  unset RELEVO_AUTH_ISSUER RELEVO_AUTH_AUDIENCE RELEVO_STATE_KEYS
  export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer-lambda.json"
  token() { "$root/target/debug/relevo-token" --tenant "$1" --sub "$2" --scopes "$3"; }
  for door in a b c; do
    lambda_port=$(free_port)
    AWS_ENDPOINT_URL="$RELEVO_TEST_AWS_ENDPOINT" \
      start_lambda_mode "$lambda_port" "$work/lambda-mode-$door.log" --front-door "$door" --iam-log "$(iam_log "clients-$door")"
    lambda_url="http://127.0.0.1:$lambda_port/mcp"
    echo "python clients against the stack of template.yaml, front door $door:"
    # OAuth as a client does it: a 401, the protected-resource metadata found by well-known
    # probing (front door A's REST APIs remap WWW-Authenticate), the dev authorization server.
    expect_remapped=0
    [[ "$door" == a ]] && expect_remapped=1
    RELEVO_EXPECT_REMAPPED=$expect_remapped timeout 60 "$venv/bin/python" "$root/tests/clients/python_oauth.py" "$lambda_url"
    RELEVO_TOKEN=$(token acme alice "notes:read notes:write") RELEVO_OTHER_TOKEN=$(token globex alice "notes:read notes:write") \
      timeout 120 "$venv/bin/python" "$root/tests/clients/python_client.py" "$lambda_url"
    # Auto mode only: a legacy call's elicitation rides on a streamed answer (front door A's
    # catch-all streams, but this script's two-URL round robin is a modern-path check).
    RELEVO_TOKEN=$(token acme alice shop) RELEVO_CLIENT_MODES=auto \
      timeout 120 "$venv/bin/python" "$root/tests/clients/python_shop.py" "$lambda_url" "$lambda_url" "$(free_port)"
    stop_gateway
  done
fi
