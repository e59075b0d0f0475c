#!/usr/bin/env bash
# starter.sh: what README "Your first tool" tells a team to do, done in a temporary folder: a new
# project from `make new-app`, then its `make test` (lint, its two typed tools' tests through the
# real server, the offline deploy check of its template). It builds in target/starter (its
# binaries have the names of ours, so not in target/debug). Fails if the project is not a working
# starting point; checks too that its functions link the project's app and not the example shop.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -C "$root" --no-print-directory new-app DIR="$work/my-tools"
CARGO_TARGET_DIR="$root/target/starter" make -C "$work/my-tools" --no-print-directory test
CARGO_TARGET_DIR="$root/target/starter" cargo build --quiet --manifest-path "$work/my-tools/Cargo.toml" -p functions --bin tools-call
binary="$root/target/starter/debug/tools-call"
grep -q "Books a table after you confirm the deposit" "$binary" || { echo "starter: tools-call lacks the app's tool" >&2; exit 1; }
if grep -q "cart_checkout" "$binary"; then echo "starter: tools-call links the example shop" >&2; exit 1; fi
echo "starter: a new project's make test passed, and its functions serve its own app"
