#!/usr/bin/env bash
# The `relevo` crate's docs as docs.rs builds them (every feature, `[package.metadata.docs.rs]`),
# with rustdoc's warnings as errors, and the pages a user reaches for: the testkit (a dev feature
# a project's own `cargo doc` leaves out), the prelude and the guide pages.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUSTDOCFLAGS="-D warnings" cargo doc -p relevo --all-features --no-deps --quiet
root="${CARGO_TARGET_DIR:-target}/doc/relevo"
for page in index.html testkit/struct.TestServer.html prelude/index.html \
    prelude/struct.JobKind.html prelude/enum.JobState.html; do
    if [ ! -f "$root/$page" ]; then
        echo "docs-check: $root/$page is missing from the docs.rs-style build" >&2
        exit 1
    fi
    echo "docs-check: $page"
done
