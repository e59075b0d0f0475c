#!/usr/bin/env bash
# package.sh: `make package`, what `cargo publish` would check, without publishing:
#   1. relevo-package-check: every workspace crate not marked `publish = false` has the crates.io
#      metadata (description, license, repository, readme, keywords, categories, version), its path
#      dependencies carry a version and are publishable themselves, and LICENSE exists;
#   2. `cargo package --no-verify` of exactly those crates (the list comes from step 1, so a new
#      crate is packaged the day it is added): each one's tarball;
#   3. each tarball checked alone, as a registry would serve it: unpacked outside this checkout,
#      its dependencies on the others resolved to their unpacked tarballs (a [patch] of crates.io,
#      as if they were published), the versions of this workspace's Cargo.lock, and `cargo check`
#      of its library and binaries with its own features only (one crate per cargo invocation, so
#      no other crate's features hide one it forgot to enable).
# Why not `cargo package`'s own verification: it builds (codegen and links) each crate from its
# tarball, and each resolves its dependencies' features apart, so a shared crate is compiled once
# per crate depending on it (relevo-protocol seven times). `cargo check` resolves, reads and
# type-checks the same sources without codegen or links: 103 s against about 230 s for the stage.
# What a tarball can get wrong (a file left out, a path outside the crate, a missing feature or
# dependency, a build script that needs the checkout) fails `cargo check` as it fails a build;
# what only a link would find is not a packaging fault, and `make unit` links every crate. Not
# checked, which cargo's verification also checks: that a build leaves the crate's sources as
# they were.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$root"
cargo build --quiet -p relevo-package-check
target/debug/relevo-package-check
names=()
while read -r name; do names+=("$name"); done < <(target/debug/relevo-package-check --list)
# Without a -p, cargo would package every member, the publish = false ones too.
[ ${#names[@]} -gt 0 ] || { echo "package: no crate is publishable" >&2; exit 1; }
packages=()
declare -A versions
for name in "${names[@]}"; do
  packages+=(-p "$name")
  versions[$name]=$("$xtask" package-version "$name")
done
cargo package --quiet --allow-dirty --no-verify "${packages[@]}"

# Outside the checkout, so that no crate finds this workspace above it, and at one path for
# every checkout of this user, with a target folder kept beside it: the compile cache keys a
# compile by its crate's folder, so a crate whose tarball is as it was in an earlier run (of any
# clone) is checked from the cache, and the registry's crates, their build scripts and proc
# macros (which the cache cannot keep) are fresh in the kept folder. Every file is unpacked with
# the time of unpacking (tar -m), so cargo checks each crate again (it judges a path crate by
# its files' times) and only the cache decides, by content. One run at a time holds both
# (tools-cache.sh's hold_build_folder). Without flock: folders of this run.
hold_build_folder package-check-target
if [[ -n "$build_folder" ]]; then
  check_target=$build_folder
  unpacked="$(dirname "$build_folder")/package-check"
  rm -rf "$unpacked"
  mkdir -p "$unpacked"
else
  check_target="$root/target/package/check"
  unpacked=$(mktemp -d)
fi
trap 'rm -rf "$unpacked"' EXIT
mkdir -p "$unpacked/.cargo"
{
  echo "[patch.crates-io]"
  for name in "${names[@]}"; do
    version=${versions[$name]}
    tar -xzmf "target/package/$name-$version.crate" -C "$unpacked"
    echo "$name = { path = \"$unpacked/$name-$version\" }"
  done
  # The workspace's dev profile (the tarballs' manifests carry none).
  printf '[profile.dev]\ndebug = "line-tables-only"\n[profile.dev.package."*"]\ndebug = false\n'
} >"$unpacked/.cargo/config.toml"
# One after another in one target folder (cargo lets one build at a time use a folder, and what
# two crates compile alike is compiled once): in folders of their own, two at a time, the checks
# took three times as long, each compiling and running every build script again.
for name in "${names[@]}"; do
  version=${versions[$name]}
  crate="$unpacked/$name-$version"
  cp Cargo.lock "$crate/Cargo.lock"
  (cd "$unpacked" && cargo check --quiet --offline --manifest-path "$crate/Cargo.toml" \
    --target-dir "$check_target") || {
    echo "package: $name-$version does not build from its tarball" >&2
    exit 1
  }
done
echo "package: ${#names[@]} crates packaged, each checked from its own tarball"
