#!/usr/bin/env bash
# Benchmark: `ggufmap inspect --json` against llama.cpp's own GGUF reader
# (ggml's gguf_init_from_file with no_alloc and a metadata context, as
# llama.cpp's loader calls it), side by side in one run, on the same 4-shard
# replica: a 262,144-token vocabulary and >= 3,000 tensors, sparse data.
#
#   bench/inspect_vs_ggml.sh [BUILD_DIR] [REPS]
#
# ours: wall time of the whole `ggufmap inspect --json` process (start-up,
#       opening and checking all 4 shards, writing the JSON to /dev/null),
#       best of REPS runs.
# ggml: gguf_init_from_file on all 4 shards, timed inside one process by
#       ggml-read-bench (so without process start-up), best of REPS.
# The comparison is therefore tilted against us.  Prints the ratio.
set -euo pipefail
build=${1:-build}
reps=${2:-10}
oracle_dir=${GGUFMAP_ORACLE_DIR:-$(cd "$build" && pwd)/oracle}
fixture="$build/tools/fixture/ggufmap-fixture"
ggufmap="$build/tools/ggufmap"
ggml_bench="$oracle_dir/bin/ggml-read-bench"
[[ -x $ggml_bench ]] || bash tests/oracle/setup.sh "$oracle_dir" >/dev/null
dir=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

"$fixture" --replica bench -o "$dir/bench" >/dev/null
shards=("$dir"/bench-0000?-of-00004.gguf)
n_tensors=$("$ggufmap" inspect --json "${shards[0]}" | grep -c '"size_estimated"')
echo "model: 4 shards, $n_tensors tensors, 262144-token vocabulary, $(du -cb "${shards[@]}" | tail -1 | cut -f1) bytes apparent"

best_ns=
for ((i = 0; i < reps; i++)); do
  t0=$(date +%s%N)
  "$ggufmap" inspect --json "${shards[0]}" >/dev/null
  t1=$(date +%s%N)
  d=$((t1 - t0))
  [[ -z $best_ns || $d -lt $best_ns ]] && best_ns=$d
done
ours=$(awk -v ns="$best_ns" 'BEGIN { printf "%.6f", ns / 1e9 }')

ggml=$("$ggml_bench" -n "$reps" --meta "${shards[@]}" | awk '/^best=/ { sub(/^best=/, "", $1); print $1 }')
echo "ggufmap inspect --json (whole process): best of $reps = ${ours} s"
echo "ggml gguf_init_from_file (in process) : best of $reps = ${ggml} s"
awk -v o="$ours" -v g="$ggml" 'BEGIN { printf "ratio ggml/ours = %.2f (above 1: ggufmap is faster)\n", g / o }'
