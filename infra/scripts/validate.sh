#!/usr/bin/env bash
# validate.sh [PROJECT]: the offline deploy check of PROJECT/template.yaml (default: this
# repository's; any project's folder), no AWS credentials:
# `cargo relevo validate` (infra/cli/src/validate.rs) with its pinned tools in this repository's
# .tools/sam: cfn-lint, `sam validate --lint`, the SAM translation (what `sam deploy` submits) and
# the deploy check on it for both front doors (`target/debug/relevo-deploy-check --rules` lists
# the rules, each with the document its limit comes from). For this repository (no PROJECT), the
# same steps also run on the Managed Instances variant of its template (the `managed-instances`
# switch on, generated into target/managed-instances), so cfn-lint, SAM and the deploy check see
# the capacity provider too; the checked-in template.yaml stays the default.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
project=$(cd "${1:-$root}" && pwd)
(cd "$root" && cargo build --quiet -p cargo-relevo)
# The tools, under the tools cache's lock, before two validations may look for them at once.
"$root/infra/scripts/sam-tools.sh" >/dev/null
if [ -z "${1:-}" ]; then
  # The variant is checked at the same time as the template, in its own process (each check is
  # one Python at a time); its output follows the template's.
  variant="$root/target/managed-instances"
  mkdir -p "$variant/src"
  : > "$variant/src/lib.rs"
  cat > "$variant/Cargo.toml" <<'TOML'
[package]
name = "managed-instances-variant"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[package.metadata.relevo]
name = "Relevo"
description = "the Managed Instances variant of this repository's template (make validate)."
managed-instances = {}
TOML
  "$root/target/debug/cargo-relevo" relevo template --manifest-path "$variant/Cargo.toml"
  "$root/target/debug/cargo-relevo" relevo validate --tools "$root/.tools/sam" "$variant/template.yaml" \
    >"$variant/validate.log" 2>&1 &
  variant_pid=$!
fi
"$root/target/debug/cargo-relevo" relevo validate --tools "$root/.tools/sam" "$project/template.yaml"
if [ -n "${variant_pid:-}" ]; then
  rc=0
  wait "$variant_pid" || rc=$?
  cat "$variant/validate.log"
  [ "$rc" -eq 0 ] || { echo "validate: the Managed Instances variant failed" >&2; exit "$rc"; }
fi
