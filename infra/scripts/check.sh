#!/usr/bin/env bash
# check.sh (`make check`): the inner loop. cargo fmt --check and clippy -D warnings over the
# workspace, then `cargo test` of the workspace crates changed relative to origin/main (main when
# there is no origin/main; CHECK_BASE=REF names another): files changed since the merge base,
# committed or not, and untracked ones. A change to the root Cargo.toml or Cargo.lock tests every
# crate. The tests run as in `make unit`: the workspace's binaries built first (tests start them),
# the moto emulator running. `make test` remains the whole check.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo=${CARGO:-cargo}

"$cargo" fmt --all --check
"$cargo" clippy --workspace --all-targets --quiet -- -D warnings

base=${CHECK_BASE:-}
if [[ -z "$base" ]]; then
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null; then base=$ref; break; fi
  done
fi
[[ -n "$base" ]] || { echo "check: no origin/main or main to compare with (set CHECK_BASE)" >&2; exit 2; }
mapfile -t changed < <({ git diff --name-only "$(git merge-base "$base" HEAD)"; git ls-files --others --exclude-standard; } | sort -u)

# The package owning each changed file: the workspace member whose folder is its longest prefix.
mapfile -t packages < <("$cargo" metadata --no-deps --format-version 1 | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
dirs = {os.path.relpath(os.path.dirname(p["manifest_path"]), meta["workspace_root"]): p["name"]
        for p in meta["packages"]}
changed = sys.argv[1:]
if {"Cargo.toml", "Cargo.lock"} & set(changed):
    names = set(dirs.values())
else:
    names = set()
    for path in changed:
        owners = [d for d in dirs if d == "." or path.startswith(d + "/")]
        if owners:
            names.add(dirs[max(owners, key=len)])
print("\n".join(sorted(names)))
' "${changed[@]}")

if [[ ${#packages[@]} -eq 0 || -z "${packages[0]}" ]]; then
  echo "check: no workspace crate changed since $base; fmt and clippy pass"
  exit 0
fi
echo "check: testing the crates changed since $base: ${packages[*]}"
CARGO="$cargo" infra/scripts/bins.sh --managed-instances
infra/scripts/with-moto.sh "$cargo" test --quiet "${packages[@]/#/--package=}"
