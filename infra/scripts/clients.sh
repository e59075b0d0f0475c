#!/usr/bin/env bash
# clients.sh: `make clients`, the SDK clients and the transcript against the shop, all at once.
# Each script starts its own gateway on a free 127.0.0.1 port over a store of its own (and its
# own emulator where it needs one), and they mostly wait on one another's round trips (one
# after another they used a third of the machine's CPU), so they run side by side. Each one's
# output goes to target/clients/NAME.out and is printed whole when all have ended, in this
# order; the run fails, naming each script that failed, when any did.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# The binaries once, before the scripts start (each would otherwise wait for the others' builds).
infra/scripts/bins.sh || exit 1
export RELEVO_BIN_DIR="${RELEVO_BIN_DIR:-$root/target/debug}"
out="$root/target/clients"
mkdir -p "$out"
names=(transcript python-client ts-client ts2-client inspector)
declare -A command=(
  [transcript]="infra/scripts/transcript.sh"
  [python-client]="infra/scripts/with-moto.sh infra/scripts/python-client.sh"
  [ts-client]="infra/scripts/ts-client.sh"
  [ts2-client]="infra/scripts/with-moto.sh infra/scripts/ts2-client.sh"
  [inspector]="infra/scripts/inspector.sh"
)
declare -A pid
for name in "${names[@]}"; do
  # shellcheck disable=SC2086 # each command is its words
  ${command[$name]} >"$out/$name.out" 2>&1 &
  pid[$name]=$!
done
failed=()
for name in "${names[@]}"; do
  wait "${pid[$name]}" || failed+=("$name")
done
for name in "${names[@]}"; do
  echo "== clients: ${command[$name]}"
  cat "$out/$name.out"
done
if ((${#failed[@]})); then
  echo "clients: failed: ${failed[*]} (their output above)" >&2
  exit 1
fi
echo "clients: ${names[*]}: every one passed"
