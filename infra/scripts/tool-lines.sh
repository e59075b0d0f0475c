#!/usr/bin/env bash
# tool-lines.sh: the lines of one typed tool (`greet`: typed arguments, typed result, derived
# schemas, registered in a server) written for Relevo and for rmcp 3.11 as its own examples write
# it: the code between the `---- the tool ----` and `---- end ----` markers of each example, blank
# and comment lines (doc comments included: both carry the same one) left out, counted by
# `relevo-xtask tool-lines`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
relevo=$("$xtask" tool-lines "$root/shared/protocol/examples/greet.rs")
rmcp=$("$xtask" tool-lines "$root/infra/bench-peers/examples/greet_rmcp.rs")
echo "greet, lines of code: relevo $relevo, rmcp $rmcp"
