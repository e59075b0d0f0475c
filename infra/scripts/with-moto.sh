#!/usr/bin/env bash
# with-moto.sh COMMAND...: runs COMMAND with a local DynamoDB + SQS emulator (moto server, from
# PyPI, installed on first use at .tools/moto, a link into the per-user tools cache, see lib.sh)
# on a free loopback port, exported to the command as RELEVO_TEST_AWS_ENDPOINT; stops the emulator
# afterwards, whatever the command's outcome.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
venv=$moto_venv

ensure_moto
port=$(free_port)
mkdir -p "$root/target"
# A log per emulator: `make clients` runs two at once.
log="$root/target/moto-$port.log"
# moto's server, with DynamoDB requests serialised as DynamoDB's own isolation requires (see the script).
MOTO_PORT="$port" "$venv/bin/python" "$(dirname "$0")/moto_serial.py" 127.0.0.1 "$port" >"$log" 2>&1 &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null || true; wait $moto_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  if curl -sf "http://127.0.0.1:$port/moto-api/" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then echo "with-moto: moto exited; see $log" >&2; exit 1; fi
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/moto-api/" >/dev/null || { echo "with-moto: moto did not start on $port" >&2; exit 1; }
RELEVO_TEST_AWS_ENDPOINT="http://127.0.0.1:$port" "$@"
