#!/usr/bin/env bash
# validate.sh [PROJECT]: the offline deploy check of PROJECT/template.yaml (default: this
# repository's; any project's folder), no AWS credentials:
# `cargo relevo validate` (infra/cli/src/validate.rs) with its pinned tools in this repository's
# .tools/sam: cfn-lint, `sam validate --lint`, the SAM translation (what `sam deploy` submits) and
# the deploy check on it for both front doors (`target/debug/relevo-deploy-check --rules` lists
# the rules, each with the document its limit comes from).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
project=$(cd "${1:-$root}" && pwd)
(cd "$root" && cargo build --quiet -p cargo-relevo)
"$root/target/debug/cargo-relevo" relevo validate --tools "$root/.tools/sam" "$project/template.yaml"
