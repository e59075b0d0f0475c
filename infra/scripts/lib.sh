# shellcheck shell=bash
# Helpers shared by the scripts that start local servers for a test run.
# Source it; it defines: root, xtask, translated, free_port, start_gateway, start_shop, start_lambda_mode,
# stop_gateway, and the tools cache's functions (tools-cache.sh).

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# What the scripts compute between their steps (free ports, state keys, the conformance verdict,
# ...): infra/xtask, built here once (a no-op when it is up to date).
xtask="${CARGO_TARGET_DIR:-$root/target}/debug/relevo-xtask"
(cd "$root" && "${CARGO:-cargo}" build --quiet -p relevo-xtask)
# The binaries the servers run (cargo build output unless told otherwise).
bin="${RELEVO_BIN_DIR:-$root/target/debug}"
gateway_pid=""

# The pinned tools (ensure_moto, ensure_browser, ...) and the tools cache they go to: tools.sh.
source "$root/infra/scripts/tools.sh"

free_port() {
  "$xtask" free-port
}

# wait_listening PORT LOGFILE WHAT: waits (20 s at most) until $gateway_pid listens on PORT.
wait_listening() {
  local port=$1 log=$2 what=$3
  trap stop_gateway EXIT
  for _ in $(seq 1 200); do
    if ! kill -0 "$gateway_pid" 2>/dev/null; then
      echo "$what exited early; its log ($log):" >&2
      cat "$log" >&2
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$what did not listen on 127.0.0.1:$port within 20 s" >&2
  return 1
}

# start_gateway PORT LOGFILE [gateway args...] — env vars (RELEVO_AUTH, ...) pass through;
# GATEWAY_BIN names another gateway binary (the conformance fixtures' one).
start_gateway() {
  local port=$1 log=$2
  shift 2
  "$bin/${GATEWAY_BIN:-relevo-gateway}" --port "$port" "$@" >"$log" 2>&1 &
  gateway_pid=$!
  wait_listening "$port" "$log" "the gateway"
}

# start_shop NAME [gateway args...]: the shop with dev tokens over a store of its own
# (target/clients/NAME.db, emptied first), as `make run` serves it; sets work, port, gateway_pid
# and RELEVO_DEV_ISSUER_FILE (for relevo-token).
start_shop() {
  local name=$1
  shift
  work="$root/target/clients"
  mkdir -p "$work"
  rm -f "$work/$name.db"*
  port=$(free_port)
  export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer-$name.json"
  RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/$name.db" start_gateway "$port" "$work/gateway-$name.log" "$@"
}

# translated: the SAM translation of template.yaml (target/sam/template.json), made again when the
# template is newer; prints its path.
translated() {
  local out="$root/target/sam/template.json"
  if [[ ! -s "$out" || "$root/template.yaml" -nt "$out" ]]; then
    "$root/infra/scripts/translate.sh" "$root/template.yaml" "$out" >&2
  fi
  echo "$out"
}

# iam_log NAME: a fresh call log for a local Lambda mode run (target/iam/NAME.log); `make test`
# ends with `relevo-iam-report` over all of them.
iam_log() {
  mkdir -p "$root/target/iam"
  rm -f "$root/target/iam/$1.log" "$root/target/iam/$1.log.grants.json"
  echo "$root/target/iam/$1.log"
}

# start_lambda_mode PORT LOGFILE [args...]: the stack of template.yaml (front door a unless args
# say --front-door b) with the real function binaries (relevo-lambda-local); needs
# AWS_ENDPOINT_URL (the emulator). Ready when the protected-resource metadata answers through
# the front door (the functions behind it are up).
start_lambda_mode() {
  local port=$1 log=$2 template
  shift 2
  template=$(translated)
  # The reconciler every 5 s instead of the template's rate: a test run lasts minutes.
  "$bin/relevo-lambda-local" --template "$template" --port "$port" --bin-dir "$bin" \
    --schedule-every 5 "$@" >"$log" 2>&1 &
  gateway_pid=$!
  wait_listening "$port" "$log" "local Lambda mode"
  for _ in $(seq 1 300); do
    if curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$port/.well-known/oauth-protected-resource/mcp"; then return 0; fi
    if ! kill -0 "$gateway_pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "local Lambda mode did not serve its metadata on 127.0.0.1:$port; its log ($log):" >&2
  cat "$log" >&2
  return 1
}

# start_gateway_pair NAME: two gateways serving the shop from one SQLite store ($work/NAME.db)
# with one state key, both naming the round-robin proxy's URL as their issuer and audience, as
# gateways behind one domain do. The client script runs the proxy on $proxy_port. Sets
# proxy_port, first, second (the gateways' ports) and first_pid; both stop on exit.
start_gateway_pair() {
  local name=$1
  proxy_port=$(free_port)
  export RELEVO_AUTH_ISSUER="http://127.0.0.1:$proxy_port" RELEVO_AUTH_AUDIENCE="http://127.0.0.1:$proxy_port/mcp"
  RELEVO_STATE_KEYS="shared:$("$xtask" state-key)"
  export RELEVO_STATE_KEYS
  export RELEVO_DEV_ISSUER_FILE="$work/dev-issuer-$name.json"
  rm -f "$work/$name.db"* "$RELEVO_DEV_ISSUER_FILE"
  first=$(free_port)
  RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/$name.db" start_gateway "$first" "$work/gateway-$name-a.log"
  first_pid=$gateway_pid
  gateway_pid=""
  second=$(free_port)
  RELEVO_AUTH=dev RELEVO_STORE="sqlite:$work/$name.db" start_gateway "$second" "$work/gateway-$name-b.log"
  trap 'kill $first_pid 2>/dev/null || true; stop_gateway' EXIT
}

stop_gateway() {
  if [[ -n "$gateway_pid" ]]; then
    kill "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    gateway_pid=""
  fi
}
