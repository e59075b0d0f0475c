#!/usr/bin/env bash
# package.sh: `make package`, what `cargo publish` would check, without publishing:
#   1. relevo-package-check: every workspace crate not marked `publish = false` has the crates.io
#      metadata (description, license, repository, readme, keywords, categories, version), its path
#      dependencies carry a version and are publishable themselves, and LICENSE exists;
#   2. `cargo package` of exactly those crates (the list comes from step 1, so a new crate is
#      packaged the day it is added): each one's tarball, then a build of it from that tarball alone,
#      the others resolved from their own tarballs as a registry would serve them.
# The verify builds use the workspace's target folder; the --config lines give them the workspace's
# dev profile (their own manifests carry none), so what they share with `cargo build` is not rebuilt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$root"
cargo build --quiet -p relevo-package-check
# The verify builds unpack each tarball from a temporary local registry into
# $CARGO_HOME/registry/src/-<hash of that registry's path>/<crate>-<version>, and cargo reuses an
# unpacked folder it finds there (it checks only its `.cargo-ok` marker). A checkout at a path
# that was packaged before, at the same version, would then build against the old sources. Those
# folders (named `-…`, never crates.io's `index.crates.io-…`) hold only such verify copies.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/
target/debug/relevo-package-check
packages=()
while read -r name; do packages+=(-p "$name"); done < <(target/debug/relevo-package-check --list)
# Without a -p, cargo would package every member, the publish = false ones too.
[ ${#packages[@]} -gt 0 ] || { echo "package: no crate is publishable" >&2; exit 1; }
cargo package --quiet --allow-dirty \
  --config 'profile.dev.debug="line-tables-only"' --config 'profile.dev.package."*".debug=false' \
  "${packages[@]}"
echo "package: $(( ${#packages[@]} / 2 )) crates packaged, each built from its own tarball"
