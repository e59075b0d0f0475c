#!/usr/bin/env bash
# stages.sh LABEL MAKE STAGE...: runs `MAKE STAGE` for each STAGE in turn (how `make test` runs
# its stages), printing each stage's duration as it ends ("LABEL: stage unit took 612 s") and, at
# the end, a table of every stage run and the total. Stops at the first stage that fails, with
# its exit status, as make stops at a failing prerequisite.
#
# Each stage's line also says how much of the machine's CPU it used: a stage that leaves most of
# it idle waits (on servers, timeouts, processes) and is the place to look for time.
#
# A stage named A+B runs `MAKE A` and `MAKE B` side by side (make test's `lint+tools`: downloads
# beside a compile) and ends when both have, failing if either fails; B's output is held in
# target/stages/B.log and printed whole once B ends, with B's own duration.
set -uo pipefail
label=$1 make=$2
shift 2
stages=() took=()
start=$SECONDS

# The machine's CPU use since a mark, as a share of all its cores (/proc/stat's first line: user
# nice system idle iowait irq softirq steal, in ticks).
cpu_mark() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6; exit}' /proc/stat; }
cpu_since() { # a cpu_mark -> "CPU N % of all cores"
  local b0 i0 b1 i1
  read -r b0 i0 <<<"$1"
  read -r b1 i1 <<<"$(cpu_mark)"
  echo "CPU $(( (b1 - b0) * 100 / ((b1 - b0) + (i1 - i0) + 1) )) % of all cores"
}

table() {
  local i
  echo "$label: stage durations"
  for i in "${!stages[@]}"; do
    printf '  %-14s %6d s\n' "${stages[$i]}" "${took[$i]}"
  done
  printf '  %-14s %6d s\n' total $((SECONDS - start))
}

# run_stage STAGE: `MAKE STAGE`, or for A+B, `MAKE A` beside `MAKE B`; the first failure's status.
run_stage() {
  local stage=$1
  if [[ "$stage" != *+* ]]; then
    "$make" --no-print-directory "$stage"
    return
  fi
  local first=${stage%%+*} second=${stage#*+} log pid rc_first rc_second
  mkdir -p target/stages
  log="target/stages/$second.log"
  (
    began=$SECONDS
    "$make" --no-print-directory "$second"
    rc=$?
    echo "$label: $second took $((SECONDS - began)) s beside $first (exit status $rc)"
    exit "$rc"
  ) >"$log" 2>&1 &
  pid=$!
  "$make" --no-print-directory "$first"
  rc_first=$?
  wait "$pid"
  rc_second=$?
  cat "$log"
  ((rc_first != 0)) && return "$rc_first"
  return "$rc_second"
}

for stage in "$@"; do
  began=$SECONDS mark=$(cpu_mark)
  run_stage "$stage"
  rc=$?
  stages+=("$stage") took+=($((SECONDS - began)))
  if [[ $rc -ne 0 ]]; then
    echo "$label: stage $stage failed after ${took[-1]} s"
    table
    exit "$rc"
  fi
  echo "$label: stage $stage took ${took[-1]} s ($(cpu_since "$mark"))"
done

table
