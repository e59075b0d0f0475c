#!/usr/bin/env bash
# make bench / make bench-smoke: builds what is measured, runs the criterion benches, then
# `relevo-bench report`, which loads each server in turn, times cold starts, and writes one
# Markdown table to target/bench/report.md (and prints it).
#
#   infra/scripts/bench.sh           full: release binaries, 10 s per load row, 7 cold starts each
#   infra/scripts/bench.sh --short   CI smoke: debug binaries, 1 s rows, 1 cold start, tiny criterion
#
# The function binaries are built in a cargo invocation of their own so that their sizes are
# those of `cargo build --release -p FUNCTION` (no feature of the bench crates leaks into them).
# The peers (infra/bench-peers) are a Cargo project of their own with its own lock file and
# target directory, built with cargo's default release profile, as an rmcp user builds them:
# nothing of this workspace's [profile.release] reaches them.
# Every server binds 127.0.0.1 and is killed by the harness when its rows are done or on failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-$root/target}
short=false
[[ "${1:-}" == "--short" ]] && short=true

if ! command -v wrk >/dev/null; then
  echo "bench: installing wrk (the HTTP load generator) from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

mapfile -t functions < <("$root/infra/scripts/functions.sh")

# The functions run as template.yaml deploys them: the bench reads their environment and memory
# from the SAM translation (made again when the template is newer, as lib.sh's `translated` does).
template="$target/sam/template.json"
if [[ ! -s "$template" || "$root/template.yaml" -nt "$template" ]]; then
  "$root/infra/scripts/translate.sh" "$root/template.yaml" "$template"
fi

if $short; then
  profile=debug
  # The Managed Instances subject: `mcp` with the `managed-instances` feature, kept as `mi-mcp`.
  $cargo build --quiet -p relevo-functions --features managed-instances --bin mcp
  cp "$target/debug/mcp" "$target/debug/mi-mcp"
  # One workspace build, as `make unit` does, so CI reuses it.
  $cargo build --quiet --workspace --bins
  $cargo build --quiet --locked --manifest-path infra/bench-peers/Cargo.toml --target-dir "$target/peers"
  $cargo bench --quiet --profile dev -p relevo-bench --bench inprocess -- \
    --warm-up-time 0.05 --measurement-time 0.1 --sample-size 10 >/dev/null
  report_args=(--short)
else
  profile=release
  $cargo build --release --quiet -p relevo-functions --features managed-instances --bin mcp
  cp "$target/release/mcp" "$target/release/mi-mcp"
  $cargo build --release --quiet -p relevo-functions $(printf -- '--bin %s ' "${functions[@]}")
  $cargo build --release --quiet -p relevo-gateway -p relevo-bench
  $cargo build --release --quiet --locked --manifest-path infra/bench-peers/Cargo.toml --target-dir "$target/peers"
  $cargo bench --quiet -p relevo-bench --bench inprocess >/dev/null
  report_args=()
fi

bin="$target/$profile"
# The functions' output (their EMF lines) goes to files, as to CloudWatch, not to this terminal.
RELEVO_LAMBDA_LOG_DIR="$target/bench/logs" "$bin/relevo-bench" report --profile "$profile" --bin-dir "$bin" --peer-dir "$target/peers/$profile" --functions "$(IFS=,; echo "${functions[*]}")" \
  --template "$template" --criterion-dir "$target/criterion" --zip-dir "$target/lambda" --out "$target/bench/report.md" "${report_args[@]}"
test -s "$target/bench/report.md"
