#!/usr/bin/env bash
# bins.sh [--managed-instances]: every binary of the workspace in target/debug, built as
# `cargo test --workspace` builds its libraries, so that the test stages share one build.
#
# Why `--examples`: with resolver 2 and later, a dev-dependency's features count only in a build
# that has a target needing dev-dependencies (a test, a bench, an example). `cargo build
# --workspace --bins` has none, so it resolves other features for tokio, the AWS SDK and every
# crate of this workspace, and compiles all of them a second time beside `cargo test`'s. With the
# examples (small, and built by `cargo test` anyway) the bins link against `cargo test`'s
# libraries. Every script and make target that needs the binaries builds them here.
#
# --managed-instances: then the two binaries built with the `managed-instances` feature (Lambda
# Managed Instances, several invocations in one environment), in the same resolve, so that only
# relevo-lambda and what depends on it compile again: `relevo-conformance-function-mi` (the
# conformance fixtures, a bin of its own) and `mcp` of relevo-functions, kept as
# target/debug/mi-mcp (the benchmark's subject); the plain `mcp` is put back after it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-$root/target}

if [[ "${1:-}" == --managed-instances ]]; then
  "$cargo" build --quiet --workspace --examples \
    --features relevo-functions/managed-instances,relevo-conformance/managed-instances \
    --bin mcp --bin relevo-conformance-function-mi
  cp "$target/debug/mcp" "$target/debug/mi-mcp"
elif [[ $# -gt 0 ]]; then
  echo "usage: bins.sh [--managed-instances]" >&2
  exit 2
fi
"$cargo" build --quiet --workspace --bins --examples
