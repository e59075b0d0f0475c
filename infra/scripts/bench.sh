#!/usr/bin/env bash
# make bench / make bench-smoke: builds what is measured, runs the criterion benches, then
# `relevo-bench report`, which loads each server in turn, times cold starts, and writes one
# Markdown table to target/bench/report.md (and prints it).
#
#   infra/scripts/bench.sh           full: the deployed binaries (cargo lambda, x86_64), 10 s per load row, 7 cold starts each
#   infra/scripts/bench.sh --short   CI smoke: debug binaries, 1 s rows, 1 cold start, tiny criterion
#
# In full mode the function binaries are what `sam build` deploys for x86_64 (`cargo lambda
# build --release --x86-64` from the workspace root), and the Lambda peers what cargo-lambda builds
# for an rmcp project; in short mode plain debug builds.
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

# The pinned tools (ensure_wrk; the tools cache's hold_build_folder): tools.sh.
source "$root/infra/scripts/tools.sh"
ensure_wrk

mapfile -t functions < <("$root/infra/scripts/functions.sh")

# The functions run as template.yaml deploys them: the bench reads their environment and memory
# from the SAM translation (made again when the template is newer, as lib.sh's `translated` does).
template="$target/sam/template.json"
if [[ ! -s "$template" || "$root/template.yaml" -nt "$template" ]]; then
  "$root/infra/scripts/translate.sh" "$root/template.yaml" "$template"
fi

if $short; then
  profile=debug
  # Every binary as `make unit` builds them (so CI reuses them), and the Managed Instances
  # subject, `mcp` with the `managed-instances` feature, kept as `mi-mcp`.
  CARGO=$cargo "$root/infra/scripts/bins.sh" --managed-instances
  # The peers' debug builds in a target folder kept for every checkout of this user
  # (tools-cache.sh's hold_build_folder: their registry crates, build scripts and proc macros stay
  # built; held until this script ends), else target/peers.
  hold_build_folder bench-peers-target
  peers_target=${build_folder:-$target/peers}
  $cargo build --quiet --locked --manifest-path infra/bench-peers/Cargo.toml --target-dir "$peers_target"
  $cargo build --quiet --locked --manifest-path infra/bench-peers/rmcp-echo/Cargo.toml --target-dir "$peers_target"
  # --workspace, not -p relevo-bench: the libraries resolve as `cargo test --workspace` resolves
  # them (one package alone would resolve its own features, and compile every library again).
  $cargo bench --quiet --profile dev --workspace --bench inprocess --bench aws_sdk -- \
    --warm-up-time 0.05 --measurement-time 0.1 --sample-size 10 >/dev/null
  report_args=(--short)
else
  profile=release
  # The functions as `sam build` deploys them: `cargo lambda build --release --x86-64` (its
  # `-C target-cpu=haswell`, the workspace's profile), from the workspace root as SAM runs it.
  # The Lambda peers as an rmcp user on Lambda builds them: `cargo lambda build --release` in
  # their own project, which has no profile, so cargo-lambda's defaults apply to them as to any
  # project that sets none (thin LTO, one codegen unit, panic abort, stripped).
  # Each binary is copied into target/bench/bin (relevo) or target/bench/peers under the name
  # the report runs; the gateway, the harness and the HTTP peers are plain `cargo build --release`.
  "$root/infra/scripts/sam-tools.sh" >/dev/null
  lambda() { PATH="$root/.tools/sam/bin:$PATH" $cargo lambda build --release --x86-64 --quiet "$@"; }
  bench_bin="$target/bench/bin"
  peers_bin="$target/bench/peers"
  rm -rf "$bench_bin" "$peers_bin"
  mkdir -p "$bench_bin" "$peers_bin"
  lambda --features relevo-functions/managed-instances --bin mcp
  cp "$target/lambda/mcp/bootstrap" "$bench_bin/mi-mcp"
  lambda $(printf -- '--bin %s ' "${functions[@]}")
  for f in "${functions[@]}"; do cp "$target/lambda/$f/bootstrap" "$bench_bin/$f"; done
  $cargo build --release --quiet -p relevo-gateway -p relevo-bench
  ln -s "$target/release/relevo-gateway" "$target/release/relevo-bench" "$bench_bin/"
  $cargo build --release --quiet --locked --manifest-path infra/bench-peers/Cargo.toml --target-dir "$target/peers"
  ln -s "$target/peers/release/peer-rmcp" "$target/peers/release/peer-hyper" "$peers_bin/"
  # The goal rows' rmcp, a project of its own built as the reference harness builds its echo
  # server (its release profile: thin LTO, four codegen units; its dependencies' features).
  $cargo build --release --quiet --locked --manifest-path infra/bench-peers/rmcp-echo/Cargo.toml --target-dir "$target/peers"
  ln -s "$target/peers/release/peer-rmcp-echo" "$peers_bin/"
  CARGO_TARGET_DIR="$target/peers" lambda --locked --manifest-path infra/bench-peers/Cargo.toml \
    --bin peer-rmcp-lambda --bin peer-rmcp-lambda-concurrent
  for f in peer-rmcp-lambda peer-rmcp-lambda-concurrent; do cp "$target/peers/lambda/$f/bootstrap" "$peers_bin/$f"; done
  $cargo bench --quiet -p relevo-bench --bench inprocess --bench aws_sdk >/dev/null
  report_args=()
fi

if $short; then
  bin="$target/debug"
  peers="$peers_target/debug"
else
  bin="$target/bench/bin"
  peers="$target/bench/peers"
fi
# The functions' output (their EMF lines) goes to files, as to CloudWatch, not to this terminal.
RELEVO_LAMBDA_LOG_DIR="$target/bench/logs" "$bin/relevo-bench" report --profile "$profile" --bin-dir "$bin" --peer-dir "$peers" --functions "$(IFS=,; echo "${functions[*]}")" \
  --template "$template" --criterion-dir "$target/criterion" --zip-dir "$target/lambda" --out "$target/bench/report.md" "${report_args[@]}"
test -s "$target/bench/report.md"
