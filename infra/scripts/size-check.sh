#!/usr/bin/env bash
# size-check.sh [ARCH]: every function template.yaml deploys is under RELEVO_SIZE_LIMIT bytes
# (default 8,000,000) as the release, stripped `bootstrap` that `make build` deploys for ARCH
# (arm64 or x86_64; default: the Default of the template's Architecture parameter), built the
# same way (`cargo lambda build --release --ARCH`, cargo-lambda and zig from .tools/sam). Prints
# one line per binary built (bytes, name); exits 1 naming every binary at or over the limit.
#
# What is built, and why that covers every function (the cheapest honest set):
# - A per-method function is a main of one line, `relevo::lambda::run(Route::Only(Method::X),
#   app::app)`, beside the allocator every main declares (seven lines of code in all); the
#   per-method functions differ only in that constant. `mcp` runs the same
#   runner with `Route::All`, so it links every method's code, and one per-method main
#   (`tools-call`) stands for the rest: a per-method binary keeps the refusal of other methods
#   that `mcp` folds away (on 2026-12-05, arm64: tools-call 8,279,536 bytes, mcp 8,279,344), and
#   the per-method binaries differ from each other by under 100 bytes (make bench's table).
#   A function whose main is not exactly that line is built and measured itself.
# - Every other function (worker, reconciler, pages, well-known: other runners) is built itself.
# Six fat-LTO links instead of twenty-one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# The pinned tools (ensure_sam_tools: cargo-lambda and zig) and the tools cache's hold_build_folder.
source "$root/infra/scripts/tools.sh"

limit=${RELEVO_SIZE_LIMIT:-8000000}
arch=${1:-}
if [[ -z "$arch" ]]; then
  # The Default under `Architecture:` in the Parameters section (generated block YAML).
  arch=$(awk '/^  Architecture:/ {p = 1; next} p && /^  [^ ]/ {exit} p && /Default:/ {print $2; exit}' template.yaml)
fi
case "$arch" in
  arm64) flag=--arm64 ;;
  x86_64) flag=--x86-64 ;;
  *) echo "size-check: ARCH must be arm64 or x86_64, not '$arch'" >&2; exit 2 ;;
esac

per_method='^    relevo::lambda::run\(Route::Only\(Method::[A-Za-z]+\), app::app\)\.await$'
representative=tools-call
functions=$(infra/scripts/functions.sh)
build=()
covered=()
for name in $functions; do
  main="functions/src/bin/$name.rs"
  if [[ -f "$main" ]] && grep -Eq "$per_method" "$main" \
    && grep -q '^static ALLOCATOR: relevo::lambda::Allocator = relevo::lambda::Allocator;$' "$main" \
    && [[ $(grep -cv '^\s*//\|^\s*$' "$main") -eq 7 ]]; then
    covered+=("$name")
  else
    build+=("$name")
  fi
done
if ((${#covered[@]})); then
  [[ " ${build[*]} " == *" mcp "* ]] || build+=(mcp)
  [[ " ${build[*]} " == *" $representative "* ]] || build+=("$representative")
fi

ensure_sam_tools >/dev/null
echo "size-check: building ${build[*]} (release, $arch); ${#covered[@]} per-method functions stand with mcp and $representative: ${covered[*]}"
# The build in a target folder kept for every checkout of this user (tools-cache.sh's
# hold_build_folder: the registry's crates for this target, their build scripts and proc macros
# stay built; held until this script ends), the binaries in target/lambda as `make build` leaves
# them. CARGO_TARGET_DIR, as cargo-lambda passes --target-dir on to `cargo metadata`, which
# refuses it; the compile cache keys a compile by it, and it names the same folder every run.
hold_build_folder "size-target-$arch"
CARGO_TARGET_DIR="${build_folder:-${CARGO_TARGET_DIR:-$root/target}}" PATH="$root/.tools/sam/bin:$PATH" \
  "${CARGO:-cargo}" lambda build --release "$flag" --quiet --lambda-dir "$root/target/lambda" \
  $(printf -- '--bin %s ' "${build[@]}")

failed=0
for name in "${build[@]}"; do
  file="target/lambda/$name/bootstrap"
  bytes=$(stat -c %s "$file")
  printf '%10d bytes  %s (%s)\n' "$bytes" "$name" "$arch"
  if ((bytes >= limit)); then
    echo "size-check: FAIL: $name is $bytes bytes on $arch, at or over the limit of $limit" >&2
    failed=1
  fi
done
if ((failed)); then
  exit 1
fi
echo "size-check: every function is under $limit bytes on $arch"
