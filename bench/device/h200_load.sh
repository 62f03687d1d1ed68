#!/usr/bin/env bash
# h200_load.sh - the loader on the full-size Qwen3.8-Flash-Next replica, on
# the device machine (NVIDIA H200, 128 GiB memory, root, CUDA).
#
# Makes the 4-shard replica (103.7 GiB apparent, sparse: ~0 disk), shows
# llama.cpp's plan for a 128 GB Mac, then loads the shard that holds the
# 26.8 GiB CPU-side per_layer_token_embd table between GPU-side tensors,
# with llama.cpp's span and with the tight planner, through the wired
# backend (mlock) and the cuda backend (cudaHostRegister), each in a fresh
# process after dropping the page cache.  The placement is --device metal:
# the GPU's buffers are mapped host ranges, which is what a GPU that maps
# host memory (Metal; CUDA with registered host memory) pins.  A sparse
# file's holes fault in as zero pages, so the pinned bytes are real memory.
#
# usage: bench/device/h200_load.sh OUT_DIR [BIN_DIR] [BACKENDS] [PLANNERS]
#   BIN_DIR holds ggufmap and ggufmap-fixture (e.g. carried from here);
#   without it the script builds ggufmap with CMake first (needs the
#   libcrypto and libcurl development files).
set -uo pipefail
out=${1:?usage: h200_load.sh OUT_DIR [BIN_DIR] [BACKENDS] [PLANNERS]}
bin=${2:-}
backends=${3:-wired cuda}
planners=${4:-span tight}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
log() { echo "$*" | tee -a "$out/summary.txt"; }

if [ -z "$bin" ]; then
    if cmake -S . -B /tmp/ggufmap-build -DGGUFMAP_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
       cmake --build /tmp/ggufmap-build -j"$(nproc)" >>"$out/build.log" 2>&1; then
        bin=/tmp/ggufmap-build/tools
        cp /tmp/ggufmap-build/tools/fixture/ggufmap-fixture "$bin/" 2>/dev/null || true
    else
        log "build failed (see build.log)"; exit 2
    fi
fi
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gm=$bin/ggufmap
log "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) MemTotal, kernel $(uname -r)"
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo none)"
log "memlock limit: $(ulimit -l)"

dir=${GGUFMAP_REPLICA_DIR:-/tmp/ggufmap-replica}
mkdir -p "$dir"
q=$dir/Q-00001-of-00004.gguf
[ -e "$q" ] || "$bin/ggufmap-fixture" --replica qwen3.8-flash-next -o "$dir/Q" >"$out/fixture.log" 2>&1 || {
    log "fixture failed"; cat "$out/fixture.log"; exit 2; }
log "replica: $(du -ch --apparent-size "$dir"/Q-*.gguf | tail -1 | cut -f1) apparent, $(du -ch "$dir"/Q-*.gguf | tail -1 | cut -f1) on disk"
"$gm" plan "$q" --device metal -ngl all --limit 96G --no-picture >"$out/plan.txt" 2>&1
# The shard with the 26.8 GiB table: the one whose GPU buffer holds the most foreign bytes.
shard=$("$gm" plan "$q" --device metal -ngl all --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
bufs = [b for b in d["buffers"] if b.get("mapped") and b["name"].startswith("MTL")]
print(max(bufs, key=lambda b: b.get("foreign_bytes", 0))["shard"] + 1)' 2>/dev/null || echo 1)  # --shard counts from 1
log "shard with the table: $shard"

timev=; [ -x /usr/bin/time ] && timev="/usr/bin/time -v"
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }
log ""
log "command: ggufmap load $q --device metal -ngl all --shard $shard --backend B --planner P --json"
log "$(printf '%-6s %-6s %12s %12s %12s %12s %10s %10s' backend planner 'pred MiB' 'VmLck MiB' 'pinned MiB' 'RSS+ MiB' 'load s' 'pin s')"
for b in $backends; do
    for p in $planners; do
        drop_caches
        j=$out/load-$b-$p.json
        timeout "${GGUFMAP_LOAD_TIMEOUT:-280}" $timev "$gm" load "$q" --device metal -ngl all --shard "$shard" --backend "$b" --planner "$p" --json \
            >"$j" 2>"$out/load-$b-$p.err"
        rc=$?
        pred=$(field pinned_bytes "$j"); l=$(field vmlck_bytes "$j"); pin=$(field backend_pinned_bytes "$j")
        r0=$(field vmrss_before "$j"); r1=$(field vmrss_after "$j"); t=$(field map "$j"); w=$(field pin "$j")
        log "$(awk -v b="$b" -v p="$p" -v a="${pred:-0}" -v l="${l:-0}" -v q="${pin:-0}" -v r0="${r0:-0}" -v r1="${r1:-0}" \
              -v t="${t:-0}" -v w="${w:-0}" -v rc="$rc" 'BEGIN {
              printf "%-6s %-6s %12.2f %12.2f %12.2f %12.2f %10.2f %10.2f%s", b, p, a/1048576, l/1048576, q/1048576,
                     (r1-r0)/1048576, t/1e9, w/1e9, rc ? "  (exit " rc ", see .err)" : "" }')"
    done
done
