#!/usr/bin/env bash
# patch_load.sh - what the llama.cpp patch (integrations/llama.cpp) costs at
# load time: llama.cpp v0.5.0 unpatched (the prebuilt oracle) beside the
# patched build (tests/patch/build.sh; the same prebuilt ggml), on
#   - the scaled replica: one shard, a CPU-side lazy per_layer_token_embd
#     table of SIZE (default 2G) between GPU-side tensors, fake Metal device,
#     -ngl all; load modes mmap and mmap_mlock (every mapped range wired);
#   - a 1,002-tensor model (llama, 111 layers, q4_0): CPU, repack on (its
#     CPU_REPACK tensors lie inside the CPU_Mapped span) and off (one
#     context, so the span was already tight: no regression allowed).
# Each configuration is loaded REPS times (default 7) per build, the builds
# alternating, each load a fresh oracle process; the load time is the wall
# time of llama_model_load_from_file alone (tests/patch/probe.c), with the
# page cache warm.  Builds: unpatched, patched (its default planner, tight),
# and patched with LLAMA_ARG_MMAP_PLANNER=span (the old mapping through the
# new code).  Prints buffers (MAPPED lines), VmLck and VmRSS while the
# model is loaded (of the first load), best and median load time per build,
# and each patched one's ratio to the unpatched one.
#
# The oracle (tests/oracle/setup.sh) is set up first if the build has none,
# and the patched llama.cpp built if needed (about 3 minutes on 2 CPUs, once
# per change of the series): bench/run.sh runs this in bounded time.
#
# usage: bench/patch_load.sh [BUILD_DIR] [SIZE] [REPS]
set -euo pipefail
build=${1:-build}
size=${2:-2G}
reps=${3:-7}
cd "$(dirname "$0")/.."
oracle_dir=${GGUFMAP_ORACLE_DIR:-$(cd "$build" && pwd)/oracle}
fixture=$build/tools/fixture/ggufmap-fixture
[[ -x $oracle_dir/bin/ggufmap-oracle ]] || bash tests/oracle/setup.sh "$oracle_dir" >/dev/null
patched_dir=$(bash tests/patch/build.sh "$oracle_dir")
probe=$patched_dir/bin/probe.so
# the builds compared: unpatched, patched with its default planner (tight),
# and patched with LLAMA_ARG_MMAP_PLANNER=span (the old mapping, the new code)
builds=(unpatched patched span)
declare -A bin=([unpatched]=$oracle_dir/bin/ggufmap-oracle [patched]=$patched_dir/bin/ggufmap-oracle
                [span]=$patched_dir/bin/ggufmap-oracle)
declare -A planner=([unpatched]="" [patched]="" [span]=span)
work=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-patch-load.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$fixture" --replica scaled --scale-bytes "$size" -o "$work/scaled.gguf" >/dev/null
"$fixture" --arch llama --layers 111 --type q4_0 --n-ff 1024 --order shuffle:3 -o "$work/t1000.gguf" >/dev/null

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# bench NAME MODEL ORACLE_ARGS...: REPS loads per build, alternating
bench() {
    local name=$1 model=$2 b i out
    shift 2
    for ((i = 0; i < reps; i++)); do
        for b in "${builds[@]}"; do
            out=$work/$name.$b.$i.out
            env -u LLAMA_ARG_MMAP_PLANNER ${planner[$b]:+LLAMA_ARG_MMAP_PLANNER=${planner[$b]}} LD_PRELOAD="$probe" \
                "${bin[$b]}" "$@" "$model" >"$out" 2>/dev/null
            grep -q '^RESULT ok$' "$out" || { echo "$name: $b did not load: ${bin[$b]} $* $model" >&2; exit 1; }
            sed -n 's/^PROBE load_ns=//p' "$out" >>"$work/$name.$b.ns"
        done
    done
    local bu mu
    bu=$(sort -n "$work/$name.unpatched.ns" | head -n 1) mu=$(median <"$work/$name.unpatched.ns")
    for b in "${builds[@]}"; do
        local n l r best med
        n=$(grep -c '^MAPPED' "$work/$name.$b.0.out" || true)
        l=$(sed -n 's/^PROBE vmlck_kb=\([0-9]*\) .*/\1/p' "$work/$name.$b.0.out")
        r=$(sed -n 's/^PROBE .* vmrss_kb=\([0-9]*\) .*/\1/p' "$work/$name.$b.0.out")
        best=$(sort -n "$work/$name.$b.ns" | head -n 1) med=$(median <"$work/$name.$b.ns")
        awk -v n="$([ "$b" = unpatched ] && echo "$name")" -v b="$b" -v nb="$n" -v l="$l" -v r="$r" -v best="$best" \
            -v med="$med" -v bu="$bu" -v mu="$mu" 'BEGIN {
            printf "%-26s %-10s %8d %10.2f %10.2f %9.1f %9.1f", n, b, nb, l / 1024, r / 1024, best / 1e6, med / 1e6
            if (b != "unpatched") printf "   / unpatched: best %.3f, median %.3f", best / bu, med / mu
            printf "\n" }'
    done
}

echo "llama.cpp $(basename "$(readlink -f "$oracle_dir/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so")") unpatched vs patched ($patched_dir), $reps loads each, alternating; $(nproc) CPUs"
printf '%-26s %-10s %8s %10s %10s %9s %9s\n' case build buffers "VmLck MiB" "VmRSS MiB" "best ms" "median ms"
metal=(--fake-gpu metal --ngl -1 --no-repack --lazy-mode on)
bench "scaled $size, mmap" "$work/scaled.gguf" "${metal[@]}"
bench "scaled $size, mmap_mlock" "$work/scaled.gguf" "${metal[@]}" --load-mode mmap_mlock
bench "1002 tensors, repack" "$work/t1000.gguf"
bench "1002 tensors, no repack" "$work/t1000.gguf" --no-repack
