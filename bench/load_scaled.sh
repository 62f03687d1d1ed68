#!/usr/bin/env bash
# load_scaled.sh - the loader's saving, measured by the kernel, on a replica
# scaled to this machine: one shard with a CPU-side lazy per_layer_token_embd
# table of SIZE (default 2G) between GPU-side tensors.  Loads it twice with
# the wired backend (mlock on every range of the GPU's buffers, what a Metal
# residency set does), once with llama.cpp's span and once with the tight
# planner, each in a fresh process with the page cache dropped where
# possible, and prints wired bytes (VmLck) and load time side by side.
#
# usage: bench/load_scaled.sh [BUILD_DIR] [SIZE]
set -euo pipefail
build=${1:-build}
size=${2:-2G}
cd "$(dirname "$0")/.."
gm=$build/tools/ggufmap
fixture=$build/tools/fixture/ggufmap-fixture
work=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-load-scaled.XXXXXX")
trap 'rm -rf "$work"' EXIT
model=$work/scaled.gguf
"$fixture" --replica scaled --scale-bytes "$size" -o "$model" >/dev/null

drop_caches() { sync; { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null || true; }
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }

echo "replica: $(du -h --apparent-size "$model" | cut -f1) apparent, $(du -h "$model" | cut -f1) on disk;" \
     "per_layer_token_embd ($size, CPU, lazy) between GPU-side tensors"
echo "command: $gm load MODEL --device metal --backend wired --planner P --json"
echo
printf '%-8s %14s %14s %14s %12s %12s\n' planner "predicted MiB" "VmLck MiB" "llama.cpp MiB" "load ms" "wire ms"
declare -A lck ms
for p in span tight; do
    drop_caches
    out=$work/$p.json
    "$gm" load "$model" --device metal --backend wired --planner "$p" --json >"$out"
    pred=$(field pinned_bytes "$out"); l=$(field vmlck_bytes "$out"); span=$(field llama_span_pinned_bytes "$out")
    t=$(field map "$out"); w=$(field pin "$out")
    lck[$p]=$l; ms[$p]=$t
    awk -v p="$p" -v a="$pred" -v b="$l" -v c="$span" -v t="$t" -v w="$w" 'BEGIN {
        printf "%-8s %14.2f %14.2f %14.2f %12.1f %12.1f\n", p, a/1048576, b/1048576, c/1048576, t/1e6, w/1e6 }'
done
awk -v a="${lck[span]}" -v b="${lck[tight]}" -v ta="${ms[span]}" -v tb="${ms[tight]}" 'BEGIN {
    r = b > 0 ? a / b : 0; s = tb > 0 ? ta / tb : 0
    printf "\nspan / tight: %.1fx the wired bytes (%.2f MiB saved), %.1fx the load time\n", r, (a - b) / 1048576, s }'
