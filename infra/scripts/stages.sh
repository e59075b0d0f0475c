#!/usr/bin/env bash
# stages.sh LABEL MAKE STAGE...: runs `MAKE STAGE` for each STAGE in turn (how `make test` runs
# its stages), printing each stage's duration as it ends ("LABEL: stage unit took 612 s") and, at
# the end, a table of every stage run and the total. Stops at the first stage that fails, with
# its exit status, as make stops at a failing prerequisite.
#
# A STAGE written `bg:NAME` starts in the background when its turn comes and runs beside the
# stages after it: `nice -n 19` and idle-class I/O, so it takes only the CPU the stages in turn
# leave (most of them wait on servers, timeouts and processes), its compiles too (a compile cache
# server of its own). For a stage that only builds and checks what it built (`size-test`: release
# links of the functions) and shares nothing with the others but cargo's locks: a stage that
# needs one exclusively must come before it (`package`: `cargo package` unpacks its tarballs
# under cargo's package cache lock, which every cargo build holds shared; behind a background
# build that lock made `package` wait minutes). Its output goes to target/stages/NAME.log and is
# printed whole once the stages in turn have passed; then this waits for it, and it fails the
# run as any stage does. A stage in turn that fails stops the background ones (their process
# groups).
set -uo pipefail
label=$1 make=$2
shift 2
stages=() took=()
start=$SECONDS
logs=target/stages

bg_names=() bg_pids=()
stop_background() {
  local pid
  for pid in "${bg_pids[@]}"; do
    kill -- -"$pid" 2>/dev/null
  done
}
trap stop_background EXIT

# The machine's CPU use since a mark, as shares of all its cores: the stages' own (every process
# but niced ones) and the background's (niced): what a stage leaves idle is what a background stage
# can use. /proc/stat's first line: user nice system idle iowait irq softirq steal, in ticks.
cpu_mark() { awk '/^cpu / {print $2+$4+$7+$8+$9, $3, $5+$6; exit}' /proc/stat; }
cpu_since() { # a cpu_mark -> "own N %, background M %"
  local f0 n0 i0 f1 n1 i1 all
  read -r f0 n0 i0 <<<"$1"
  read -r f1 n1 i1 <<<"$(cpu_mark)"
  all=$(((f1 - f0) + (n1 - n0) + (i1 - i0) + 1))
  echo "CPU: own $(( (f1 - f0) * 100 / all )) %, background $(( (n1 - n0) * 100 / all )) % of all cores"
}

table() {
  local i
  echo "$label: stage durations"
  for i in "${!stages[@]}"; do
    printf '  %-24s %6s s\n' "${stages[$i]}" "${took[$i]}"
  done
  printf '  %-24s %6d s\n' total $((SECONDS - start))
}

for stage in "$@"; do
  if [[ $stage == bg:* ]]; then
    name=${stage#bg:}
    mkdir -p "$logs"
    rm -f "$logs/$name.status"
    # Under the compile cache (RUSTC_WRAPPER set by compile-cache.sh), a cacheable rustc runs in the
    # cache's server, not under the stage's nice: the background stage gets a server of its own,
    # started at its priority, on its own port and cache folder (what it compiles, nothing else does).
    command=("$make" --no-print-directory "$name")
    if [[ -n "${RUSTC_WRAPPER:-}" && -n "${SCCACHE_DIR:-}" ]]; then
      command=(env -u RUSTC_WRAPPER SCCACHE_SERVER_PORT=$((${SCCACHE_SERVER_PORT:-4226} + 1 + ${#bg_names[@]}))
        RELEVO_COMPILE_CACHE="$SCCACHE_DIR-background" SCCACHE_CACHE_SIZE=4G
        "$(dirname "${BASH_SOURCE[0]}")/compile-cache.sh" "${command[@]}")
    fi
    # setsid: its own process group, so that stopping it stops every cargo, rustc and linker under it.
    setsid bash -c 'began=$SECONDS; nice -n 19 ionice -c 3 "$@" >"'"$logs/$name"'.log" 2>&1; rc=$?
      echo "$rc $((SECONDS - began))" >"'"$logs/$name"'.status"' \
      _ "${command[@]}" &
    bg_names+=("$name") bg_pids+=($!)
    echo "$label: stage $name started in the background (nice 19; its output: $logs/$name.log)"
    continue
  fi
  began=$SECONDS mark=$(cpu_mark)
  "$make" --no-print-directory "$stage"
  rc=$?
  stages+=("$stage") took+=($((SECONDS - began)))
  if [[ $rc -ne 0 ]]; then
    echo "$label: stage $stage failed after ${took[-1]} s"
    table
    exit "$rc"
  fi
  echo "$label: stage $stage took ${took[-1]} s ($(cpu_since "$mark"))"
done

failed=0
for i in "${!bg_names[@]}"; do
  name=${bg_names[$i]}
  began=$SECONDS
  wait "${bg_pids[$i]}"
  waited=$((SECONDS - began))
  read -r rc secs <"$logs/$name.status" 2>/dev/null || { rc=1 secs='?'; }
  echo "$label: stage $name (background), its output:"
  cat "$logs/$name.log"
  stages+=("$name (background)" "  waited for at the end") took+=("$secs" "$waited")
  if [[ $rc -ne 0 ]]; then
    echo "$label: stage $name failed after $secs s (in the background)"
    failed=$rc
  else
    echo "$label: stage $name took $secs s in the background; the run waited $waited s for it at the end"
  fi
done
bg_pids=()
table
exit "$failed"
