#!/usr/bin/env bash
# stages.sh LABEL MAKE STAGE...: runs `MAKE STAGE` for each STAGE in turn (how `make test` runs
# its stages), printing each stage's duration as it ends ("LABEL: stage unit took 612 s") and, at
# the end, a table of every stage run and the total. Stops at the first stage that fails, with
# its exit status, as make stops at a failing prerequisite.
set -uo pipefail
label=$1 make=$2
shift 2
stages=() took=()
start=$SECONDS

table() {
  local i
  echo "$label: stage durations"
  for i in "${!stages[@]}"; do
    printf '  %-14s %6d s\n' "${stages[$i]}" "${took[$i]}"
  done
  printf '  %-14s %6d s\n' total $((SECONDS - start))
}

for stage in "$@"; do
  began=$SECONDS
  "$make" --no-print-directory "$stage"
  rc=$?
  stages+=("$stage") took+=($((SECONDS - began)))
  if [[ $rc -ne 0 ]]; then
    echo "$label: stage $stage failed after ${took[-1]} s"
    table
    exit "$rc"
  fi
  echo "$label: stage $stage took ${took[-1]} s"
done
table
