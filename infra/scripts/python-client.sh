#!/usr/bin/env bash
# Runs the official Python SDK client (mcp 2.3, pinned) against the local gateway serving the
# demo app. Installs the client into .venv (git-ignored) on first use.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mcp_version="2.3.0"
venv="$root/.venv"

if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$mcp_version')" 2>/dev/null; then
  echo "python-client: installing mcp==$mcp_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$mcp_version"
fi
cargo build --quiet -p relevo-gateway --bins
work="$root/target/clients"
mkdir -p "$work"
rm -f "$work/store.db"*
port=$(free_port)
export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer.json"
RELEVO_APP=shop RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/store.db" start_gateway "$port" "$work/gateway-python.log"
token() { "$root/target/debug/relevo-token" --tenant "$1" --sub "$2" --scopes "notes:read notes:write"; }
RELEVO_TOKEN=$(token acme alice) RELEVO_OTHER_TOKEN=$(token globex alice) \
  timeout 120 "$venv/bin/python" "$root/tests/clients/python_client.py" "http://127.0.0.1:$port/mcp"
