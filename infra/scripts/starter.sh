#!/usr/bin/env bash
# starter.sh: the newcomer's path, done in a temporary folder outside this repository, against
# what would be published:
#   1. `cargo relevo new my-tools` (this repository's cargo-relevo, on PATH as an installed one is);
#   2. no file of the project names a path of this repository;
#   3. the project resolves `relevo` from this repository's packaged crates (the folders
#      `cargo package` verified, in target/package): a [patch.crates-io] in a .cargo/config.toml
#      one folder above the project, so the project's own files stay as `new` wrote them; the
#      registry crates are pinned by this repository's Cargo.lock, copied in, so CI builds what was
#      tested here;
#   4. the project's `make test` (lint, its tests, `cargo relevo template --check`,
#      `cargo relevo validate`);
#   5. its local server and tests link no AWS SDK and no example app (cargo tree);
#   6. `cargo relevo dev` serves it on 127.0.0.1, `cargo relevo token` mints a token, and a
#      `tools/call` of its own `hello` tool by curl answers with the greeting.
# It builds in target/starter (shared between runs; the project's binaries have our names).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$root"
work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf 'starter: %s (%ss)\n' "$1" "$SECONDS"; SECONDS=0; }

# The packaged crates (make package, which `make test` runs first).
cargo build --quiet -p relevo-package-check -p cargo-relevo
mapfile -t crates < <(target/debug/relevo-package-check --list)
version=$("$xtask" package-version relevo)
# Packaged again when a tarball is missing or older than a file of its crate.
stale=$("$xtask" stale-packages --package-dir target/package "${crates[@]}")
if [ -n "$stale" ]; then echo "starter: packaging again for" $stale; infra/scripts/package.sh; fi
mkdir -p "$work/bin" "$work/.cargo"
cp target/debug/cargo-relevo "$work/bin/"
export PATH="$work/bin:$PATH"
step "cargo-relevo and the packaged crates of relevo $version ready"

# 1. The project, as a newcomer makes it.
(cd "$work" && cargo relevo new my-tools)
project="$work/my-tools"
step "cargo relevo new my-tools"

# 2. Nothing in it points at this checkout.
if grep -rIl -- "$root" "$project"; then echo "starter: the files above name $root" >&2; exit 1; fi
grep -q "^relevo = { version = \"$version\"" "$project/Cargo.toml" \
  || { echo "starter: the project does not depend on relevo $version by version" >&2; exit 1; }
step "no path of this repository in the project; relevo = \"$version\" by version"

# 3. relevo from the packaged crates; everything else pinned as here.
# The target folder is set here too, not by CARGO_TARGET_DIR: the compile cache keys a compile by
# the CARGO_* environment, and this checkout's path in it would miss every crate a clone at
# another path compiled.
{
  echo '[build]'
  echo "target-dir = \"$root/target/starter\""
  echo '[patch.crates-io]'
  for crate in "${crates[@]}"; do echo "$crate = { path = \"$root/target/package/$crate-$version\" }"; done
} >"$work/.cargo/config.toml"
cp Cargo.lock "$project/Cargo.lock"
export RELEVO_TOOLS_DIR="$root/.tools/sam"

# 4. The project's own `make test`.
make -C "$project" --no-print-directory test
step "the project's make test"

# 5. What make run and the tests link.
tree=$(cd "$project" && cargo tree --quiet -e normal,dev -p local -p my-tools --prefix none)
if grep -E '^(aws-|relevo-app|relevo-gateway|relevo-lambda)' <<<"$tree" | sort -u | grep .; then
  echo "starter: the project's local server or tests link the crates above" >&2
  exit 1
fi
grep -q '^relevo-local ' <<<"$tree" || { echo "starter: cargo tree shows no relevo-local" >&2; exit 1; }
functions=$(cd "$project" && cargo tree --quiet -e normal -p functions --prefix none)
grep -q '^aws-sdk-dynamodb ' <<<"$functions" || { echo "starter: the functions link no DynamoDB client" >&2; exit 1; }
if grep -q '^relevo-app ' <<<"$functions"; then echo "starter: the functions link the example shop" >&2; exit 1; fi
step "local server and tests: no aws-*, no example app; functions: the AWS SDK, no example app"

# 6. The local server, a token and a call, as the project's README shows them.
port=$(free_port)
(cd "$project" && exec cargo relevo dev --port "$port") >"$work/dev.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do
  [ -f "$project/.relevo/dev-issuer.json" ] && curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break
  kill -0 "$server" 2>/dev/null || { cat "$work/dev.log" >&2; echo "starter: cargo relevo dev exited" >&2; exit 1; }
  sleep 0.5
done
token=$(cd "$project" && cargo relevo token)
body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}}}'
reply=$(curl -s --max-time 20 "http://127.0.0.1:$port/mcp" \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: hello' -d "$body")
grep -q '"greeting":"Hello, Ada!"' <<<"$reply" || { echo "starter: tools/call answered: $reply" >&2; cat "$work/dev.log" >&2; exit 1; }
unauthorized=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' \
  -H 'Mcp-Name: hello' -d "$body")
[ "$unauthorized" = 401 ] || { echo "starter: a call without a token got $unauthorized, not 401" >&2; exit 1; }
step "cargo relevo dev + cargo relevo token + curl tools/call hello: $reply"
echo "starter: a project made by cargo relevo new, on the packaged crates, passed its make test and served its own tool"
