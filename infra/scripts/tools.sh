#!/usr/bin/env bash
# tools.sh: every tool `make test` installs, pinned, in one place.
#   - Sourced (lib.sh does), it defines one ensure_* function per tool set and the folder each
#     lands in; the script that runs a tool calls its function first.
#   - Run (`make tools`), it installs them all, in the order make test's stages first use them.
#     `make test` runs it beside `lint` (stages.sh's `lint+tools`), so that a fresh machine
#     downloads and unpacks while lint compiles instead of one stage at a time.
# Python and Node tool sets go to the per-user tools cache (tools-cache.sh: installed once per
# set of pins, verified on every use, one installer at a time per set); Debian's packages
# (chromium, wrk) once per machine, with apt-get, one installer at a time.
# Pins not here: the SAM CLI, cfn-lint and cargo-lambda stay in sam-tools.sh (the deploy check
# and `cargo relevo new`'s tests read them there); Node itself in tools-cache.sh.

root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
source "$root/infra/scripts/tools-cache.sh"

# ensure_sam_tools: the SAM CLI, cfn-lint and cargo-lambda at .tools/sam (sam-tools.sh).
ensure_sam_tools() {
  "$root/infra/scripts/sam-tools.sh"
}

# The DynamoDB/SQS/Secrets Manager emulator (with-moto.sh).
moto_version="5.2.5"
moto_venv="$root/.tools/moto"
ensure_moto() {
  ensure_venv "$moto_venv" "import importlib.metadata as m, sys; sys.exit(m.version('moto') != '$moto_version')" \
    "moto[server]==$moto_version"
}

# The official MCP conformance suite (conformance.sh).
conformance_suite_version="0.2.0-alpha.12"
conformance_tools="$root/.tools/conformance"
ensure_conformance_suite() {
  ensure_node_packages "$conformance_tools" "@modelcontextprotocol/conformance@$conformance_suite_version"
}

# The official Python SDK client (python-client.sh).
python_mcp_version="2.3.0"
python_client_venv="$root/.venv"
ensure_python_client() {
  ensure_venv "$python_client_venv" "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$python_mcp_version')" \
    "mcp==$python_mcp_version"
}

# The official TypeScript SDK v1 client (ts-client.sh).
ts_sdk_version="1.32.2"
ts_client_tools="$root/.tools/ts-client"
ensure_ts_client() {
  ensure_node_packages "$ts_client_tools" "@modelcontextprotocol/sdk@$ts_sdk_version"
}

# The official TypeScript SDK v2 client (ts2-client.sh).
ts2_sdk_version="2.4.0"
ts2_client_tools="$root/.tools/ts2-client"
ensure_ts2_client() {
  ensure_node_packages "$ts2_client_tools" "@modelcontextprotocol/client@$ts2_sdk_version"
}

# The MCP Inspector CLI (inspector.sh).
inspector_version="2.12.0"
inspector_tools="$root/.tools/inspector"
ensure_inspector() {
  ensure_node_packages "$inspector_tools" "@modelcontextprotocol/inspector@$inspector_version"
}

# Headless Chromium (Debian's package; CHROMIUM names another) and playwright-core (browser.sh).
playwright_version="1.65.1"
browser_tools="$root/.tools/browser"
chromium=${CHROMIUM:-/usr/bin/chromium}
ensure_browser() {
  [[ -x "$chromium" ]] || ensure_debian_packages "$chromium" chromium chromium-driver
  ensure_node_packages "$browser_tools" "playwright-core@$playwright_version"
}

# wrk, the HTTP load generator (bench.sh).
ensure_wrk() {
  command -v wrk >/dev/null || ensure_debian_packages /usr/bin/wrk wrk
}

# ensure_debian_packages FILE PACKAGE...: installs PACKAGEs with apt-get unless FILE exists once
# the lock is held (flock on the tools cache's apt.lock: apt-get refuses to run beside itself).
ensure_debian_packages() {
  local file=$1 lock
  shift
  mkdir -p "$tools_cache"
  exec {lock}>"$tools_cache/apt.lock"
  flock "$lock"
  if [[ ! -x "$file" ]]; then
    echo "installing $* from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
  local rc=$?
  exec {lock}>&-
  return "$rc"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  ensure_sam_tools
  ensure_moto
  ensure_conformance_suite
  ensure_python_client
  ensure_ts_client
  ensure_ts2_client
  ensure_inspector
  ensure_browser
  ensure_wrk
  echo "tools: every pinned tool is installed (${tools_cache})"
fi
