#!/usr/bin/env bash
# Measurement: the disk `make test` needs, as CI runs it.  Clones REV of this
# repository into a fresh temporary folder, runs `CI=true bash .ci/run` there
# (or CMD), samples the clone's size (`du -sx`) every INTERVAL seconds, and
# prints the peak, the size at the end, the wall time and the command's exit
# status.  The clone is removed afterwards unless KEEP=1.  A fresh CI machine
# has no patched llama.cpp in its cache: GGUFMAP_PATCH_CACHE=$(mktemp -d)
# measures that case (the cache lies outside the clone, not counted).
#   bench/suite_disk.sh [REV] [INTERVAL] [CMD...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
interval=${2:-10}
shift $(($# < 2 ? $# : 2))
cmd=("$@")
[[ ${#cmd[@]} -gt 0 ]] || cmd=(env CI=true bash .ci/run)
work=$(mktemp -d)
git clone -q "$repo" "$work/c" && git -C "$work/c" checkout -q "$rev" || { echo "cannot clone $rev" >&2; exit 2; }
start=$(date +%s)
( cd "$work/c" && "${cmd[@]}" ) >"$work/run.log" 2>&1 &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  kib=$(du -sxk "$work/c" 2>/dev/null | cut -f1)
  (( kib > peak )) && peak=$kib
  sleep "$interval"
done
wait "$pid"
rc=$?
end=$(du -sxk "$work/c" | cut -f1)
(( end > peak )) && peak=$end
printf 'command   %s (in a clone of %s)\n' "${cmd[*]}" "$(git -C "$work/c" rev-parse --short HEAD)"
printf 'exit      %d after %d s\n' "$rc" $(( $(date +%s) - start ))
printf 'peak      %d MiB (sampled every %s s)\n' $((peak / 1024)) "$interval"
printf 'at end    %d MiB\n' $((end / 1024))
grep -E 'tests passed|tests failed|Total Test time' "$work/run.log"
if [[ ${KEEP:-} == 1 ]]; then echo "kept: $work"; else rm -rf "$work"; fi
exit "$rc"
