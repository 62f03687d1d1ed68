#!/usr/bin/env bash
# Benchmark: what `plan`'s next steps cost on top of the plan itself when a
# costly -ot pattern is given (issue 20, item 8).  Side by side in one run,
# on a 24-layer qwen3moe fixture (291 tensors) with -ot '.*.*.*.*.*x=CPU'
# (about 10^6 steps of libstdc++'s search per tensor name):
#
#   one placement   ggufmap plan MODEL --device cuda -ngl 10 -ot P --format buffers
#                   (the plan alone: no next steps)
#   with advice     ggufmap plan MODEL --device cuda -ngl 10 -ot P --limit 1M
#                   (the plan and its next steps: a repack dry run with its
#                   candidate orders, -ot, --n-cpu-moe and -ngl bisections,
#                   each a placement of its own)
#
#   bench/plan_advice_regex.sh [BUILD_DIR] [REPS]
#
# Prints the best user CPU time of REPS runs of each (CPU time, not wall:
# the regex search is all CPU, and a shared machine's load stays out) and
# their ratio.  Every placement searches the user's patterns again unless
# they share the plan's ggufmap_regex_cache: the ratio is then about the
# number of placements (6.05 here before the cache); with it, 0.98-1.00
# (docs/regex.md, "Searched once").
set -euo pipefail
build=${1:-build}
reps=${2:-3}
fixture="$build/tools/fixture/ggufmap-fixture"
ggufmap="$build/tools/ggufmap"
runstat="$build/bench/ggufmap-runstat"
dir=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$fixture" --arch qwen3moe --layers 24 --order shuffle:3 -o "$dir/q24.gguf" >/dev/null
flags=(--device cuda -ngl 10 -ot '.*.*.*.*.*x=CPU')
# best user CPU seconds of REPS runs of the command (ggufmap-runstat)
best_user() {
  local best= t
  for ((i = 0; i < reps; i++)); do
    t=$("$runstat" "$@" | sed -n 's/.*user_s=\([0-9.]*\).*/\1/p')
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}
one=$(best_user "$ggufmap" plan "$dir/q24.gguf" "${flags[@]}" --format buffers)
advice=$(best_user "$ggufmap" plan "$dir/q24.gguf" "${flags[@]}" --limit 1M)
n=$("$ggufmap" plan "$dir/q24.gguf" "${flags[@]}" --limit 1M | grep -c '^ *[0-9]\. ' || true)
echo "model: qwen3moe, 24 layers, $("$ggufmap" inspect "$dir/q24.gguf" | awk '$1 == "tensors" { print $2 + 0 }') tensors; -ot '.*.*.*.*.*x=CPU'"
echo "plan alone (one placement)        : best of $reps = ${one} s user"
echo "plan and its $n next step(s)      : best of $reps = ${advice} s user"
awk -v a="$advice" -v o="$one" 'BEGIN { printf "ratio with/alone = %.2f (1: the next steps cost no more searching)\n", a / o }'
