#!/usr/bin/env bash
# transcript.sh: replays the curl transcript of shared/relevo/docs/protocol.md ("Every flow a
# client meets, by curl") against the shop served as `make run` serves it (dev tokens, per-method
# routing) over a store of its own: every `bash` block of the page run with bash and curl as the
# page shows it, every answer checked against the page's (`relevo-xtask transcript`: the server's
# ids, sealed state and times are the page's `…`). Fails at the first step that answers otherwise.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ -n "${RELEVO_BIN_DIR:-}" ]] || "$root/infra/scripts/bins.sh"
start_shop transcript --routing per-method
trap 'kill "$gateway_pid" 2>/dev/null || true' EXIT
export URL="http://127.0.0.1:$port/mcp"
TOKEN=$("$bin/relevo-token" --scopes 'shop exports:read exports:write')
export TOKEN
"$xtask" transcript "$root/shared/relevo/docs/protocol.md"
