#!/usr/bin/env bash
# starter.sh: the newcomer's path as the README shows it, typed literally, in a temporary folder
# outside this repository:
#   1. `cargo install --path infra/cli --locked` (into a folder of its own, put first on PATH as
#      ~/.cargo/bin is), then `cargo relevo new my-tools` from outside the checkout: while relevo is
#      unpublished the CLI writes the project's .cargo/config.toml ([patch.crates-io] relevo from
#      this checkout) and this checkout's Cargo.lock, nothing else names this machine;
#   2. no other file of the project names a path of this repository;
#   3. the project's `make test` as generated (lint, its tests, `cargo relevo template --check`,
#      `cargo relevo validate`), nothing edited by hand;
#   4. its local server and tests link no AWS SDK and no example app (cargo tree);
#   5. `cargo relevo dev` serves it on 127.0.0.1, `cargo relevo token` mints a token, and a
#      `tools/call` of its own `hello` tool by curl answers with the greeting.
# (`make package` checks the packaged crates, each built from its tarball.) The project builds in
# a target folder kept for every checkout of this user (${XDG_CACHE_HOME:-~/.cache}/relevo/
# starter-target: the registry's crates, their build scripts and proc macros, which the compile
# cache cannot keep, stay built; this checkout's crates and the project's are compiled again, at
# their own paths; tools-cache.sh's hold_build_folder), set in a
# .cargo/config.toml one folder above the project, so the project's own files stay as `new` wrote
# them.
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

mkdir -p "$work/.cargo"
# The target folders are set here, not by CARGO_TARGET_DIR: the compile cache keys a compile by
# the CARGO_* environment, and this checkout's path in it would miss every crate a clone at another
# path compiled. The project's own .cargo/config.toml (the patch) is merged with this one.
hold_build_folder starter-target
starter_target=${build_folder:-$root/target/starter}
printf '[build]\ntarget-dir = "%s"\n' "$starter_target" >"$work/.cargo/config.toml"
version=$("$xtask" package-version relevo)

# 1. The CLI, installed as the README says, then the project, as a newcomer makes it.
# As the README types it, plus where to: --root (this test's own folder, not ~/.cargo), and
# --debug --target-dir (the build `make unit` made of this checkout, reused: the same sources).
(cd "$work" && cargo install --quiet --path "$root/infra/cli" --locked --root "$work/cargo" --debug --target-dir "$root/target")
export PATH="$work/cargo/bin:$PATH"
[ "$(command -v cargo-relevo)" = "$work/cargo/bin/cargo-relevo" ] || { echo "starter: cargo-relevo is not the installed one" >&2; exit 1; }
step "cargo install --path infra/cli --locked (relevo $version)"

(cd "$work" && cargo relevo new my-tools)
project="$work/my-tools"
step "cargo relevo new my-tools"

# 2. Nothing in it points at this checkout but the unpublished crate's patch.
grep -qF "relevo = { path = \"$root/shared/relevo\" }" "$project/.cargo/config.toml" \
  || { echo "starter: .cargo/config.toml does not build relevo from $root" >&2; exit 1; }
if grep -rIl --exclude=config.toml -- "$root" "$project"; then echo "starter: the files above name $root" >&2; exit 1; fi
grep -q "^relevo = { version = \"$version\"" "$project/Cargo.toml" \
  || { echo "starter: the project does not depend on relevo $version by version" >&2; exit 1; }
step "no path of this repository in the project; relevo = \"$version\" by version"

export RELEVO_TOOLS_DIR="$root/.tools/sam"

# 3. The project's own `make test`, as generated.
make -C "$project" --no-print-directory test
step "the project's make test"

# 4. What make run and the tests link.
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

# 5. The local server, a token and a call, as the project's README shows them.
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
echo "starter: a project made by an installed cargo relevo new, outside this checkout, passed its make test as generated and served its own tool"
