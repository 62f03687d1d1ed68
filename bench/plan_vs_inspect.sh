#!/usr/bin/env bash
# Benchmark: `ggufmap plan` beside `ggufmap inspect --json` in one run, on
# the 4-shard Qwen3.8-Flash-Next replica (103.7 GiB, 1,223 tensors) and on the
# 4-shard bench replica (51 MB, 3,244 tensors, 262,144-token vocabulary):
# wall time (best of REPS) and peak resident memory, with the next steps
# (whose repack dry run writes the headers again) and without them
# (--no-advice: the prediction alone).  Memory must follow the
# tensor count, not the tensor bytes: the 103.7 GiB model must not need more
# than the 51 MB one.
#   bench/plan_vs_inspect.sh [BUILD_DIR] [REPS]
set -euo pipefail
build=${1:-build}
reps=${2:-10}
ggufmap="$build/tools/ggufmap"
fixture="$build/tools/fixture/ggufmap-fixture"
runstat="$build/bench/ggufmap-runstat"
dir=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$fixture" --replica qwen3.8-flash-next -o "$dir/qwen" >/dev/null
"$fixture" --replica bench -o "$dir/bench" >/dev/null

best() { # CMD... -> "best_wall maxrss"
  local b= r=0 out w m
  for ((i = 0; i < reps; i++)); do
    out=$("$runstat" "$@")
    w=${out#wall_s=}; w=${w%% *}
    m=${out#*maxrss_kib=}; m=${m%% *}
    if [[ -z $b ]] || awk -v a="$w" -v c="$b" 'BEGIN { exit !(a < c) }'; then b=$w; fi
    ((m > r)) && r=$m
  done
  echo "$b $r"
}

printf '%-10s %-44s %10s %12s\n' model command "best s" "peak KiB"
for m in qwen bench; do
  first="$dir/$m-00001-of-00004.gguf"
  read -r tw tm < <(best "$ggufmap" inspect --json "$first")
  printf '%-10s %-44s %10s %12s\n' "$m" "inspect --json" "$tw" "$tm"
  read -r pw pm < <(best "$ggufmap" plan --json --device metal -ngl all "$first")
  printf '%-10s %-44s %10s %12s\n' "$m" "plan --json --device metal -ngl all" "$pw" "$pm"
  read -r aw am < <(best "$ggufmap" plan --json --device metal -ngl all --no-advice "$first")
  printf '%-10s %-44s %10s %12s\n' "$m" "plan --json --device metal -ngl all --no-advice" "$aw" "$am"
  read -r cw cm < <(best "$ggufmap" plan --color never --device cpu -ngl 0 --lazy-mode on "$first")
  printf '%-10s %-44s %10s %12s\n' "$m" "plan (text) --device cpu --lazy-mode on" "$cw" "$cm"
  awk -v p="$pw" -v i="$tw" -v pm="$pm" -v im="$tm" -v m="$m" \
    'BEGIN { printf "%-10s plan/inspect: time ratio %.2f, memory ratio %.2f\n", m, p / i, pm / im }'
done
