#!/usr/bin/env bash
# repack against cp: the same bytes on the same disk, side by side in one run.
#   bench/repack_vs_cp.sh [BUILD_DIR] [WORKDIR] [--cold] [RUNS]
# Makes (once) a non-sparse llama f32 model of 8.5 GiB with random data
# (ggufmap-fixture --n-embd 8192 --n-ff 16384 --vocab 65536), then times, in
# turn,
#   cp MODEL COPY && sync COPY    (coreutils cp: copy_file_range, or a
#                                  reflink where the file system shares blocks)
#   ggufmap repack MODEL -o OUT --order canonical
#                                 (reorders, hashes while copying, reads every
#                                  piece back once on disk, checks every
#                                  tensor, fsyncs, renames)
# RUNS (default 3) times each, and prints the best and the median
# throughputs and their ratios (repack / cp; the goal is >= 0.9).  Warm by
# default: the model is read once before each run, so both read it from the
# page cache; --cold drops the caches (echo 3 > /proc/sys/vm/drop_caches,
# root) before every run.  GGUFMAP_BENCH_REPACK_ARGS adds repack flags (e.g.
# "--copy kernel").  GGUFMAP_BENCH_REPACK_MODEL=f16 makes the model issue 21
# measured instead: llama f16 of 2.25 GiB (--n-embd 8192 --n-ff 16384
# --vocab 32768 --layers 1), in WORKDIR/model-f16.gguf.
set -euo pipefail
build=${1:-build} work=${2:-/tmp/ggufmap-bench-repack} cold=0
[[ ${3:-} == --cold ]] && cold=1
runs=${4:-3}
read -r -a extra <<<"${GGUFMAP_BENCH_REPACK_ARGS:-}"
ggufmap=$build/tools/ggufmap fixture=$build/tools/fixture/ggufmap-fixture
mkdir -p "$work"
model=$work/model.gguf need_kb=$((14 * 1024 * 1024)) # model + two outputs, with room
make=(--arch llama --type f32 --n-embd 8192 --n-ff 16384 --vocab 65536 --layers 2 --seed 9)
if [[ ${GGUFMAP_BENCH_REPACK_MODEL:-} == f16 ]]; then
  model=$work/model-f16.gguf need_kb=$((4 * 1024 * 1024))
  make=(--arch llama --type f16 --n-embd 8192 --n-ff 16384 --vocab 32768 --layers 1 --seed 9)
fi
avail_kb=$(df -Pk "$work" | awk 'NR == 2 { print $4 }')
if [[ ! -f $model ]]; then need_kb=$((need_kb + need_kb / 3)); fi
if (( avail_kb < need_kb )); then
  echo "repack_vs_cp: $work has $((avail_kb / 1024)) MiB free, needs $((need_kb / 1024)) MiB" >&2; exit 2
fi
if [[ ! -f $model ]]; then
  echo "making $model ..."
  "$fixture" "${make[@]}" -o "$model" >/dev/null
fi
bytes=$(stat -c %s "$model")
echo "model: $model, $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f GiB", b / 2^30 }')), $(du -k "$model" | cut -f1) KiB on disk"
drop() {
  sync
  if (( cold )); then echo 3 >/proc/sys/vm/drop_caches || { echo "cannot drop caches (root needed)" >&2; exit 2; }
  else cat "$model" >/dev/null; fi
}
now() { date +%s.%N; }
cp_times=() rp_times=()
for ((i = 1; i <= runs; i++)); do
  rm -f "$work/copy.gguf" "$work/out.gguf"
  drop; t0=$(now); cp "$model" "$work/copy.gguf"; sync "$work/copy.gguf"; t1=$(now)
  rm -f "$work/copy.gguf"
  drop; t2=$(now)
  "$ggufmap" repack "$model" -o "$work/out.gguf" --order canonical --no-progress "${extra[@]}" >"$work/repack.out"; t3=$(now)
  rm -f "$work/out.gguf"
  c=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') r=$(awk -v a="$t2" -v b="$t3" 'BEGIN { print b - a }')
  printf 'run %d: cp %.2f s (%.0f MiB/s)   repack %.2f s (%.0f MiB/s; %s)\n' "$i" "$c" "$(awk -v b="$bytes" -v t="$c" 'BEGIN { print b / t / 2^20 }')" \
    "$r" "$(awk -v b="$bytes" -v t="$r" 'BEGIN { print b / t / 2^20 }')" "$(grep -o 'pread/pwrite\|copy_file_range' "$work/repack.out")"
  cp_times+=("$c") rp_times+=("$r")
done
stats() { printf '%s\n' "$@" | sort -g | awk '{ t[NR] = $1 } END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2; print t[1], m }'; }
read -r best_cp med_cp < <(stats "${cp_times[@]}")
read -r best_rp med_rp < <(stats "${rp_times[@]}")
awk -v b="$bytes" -v c="$best_cp" -v r="$best_rp" -v mc="$med_cp" -v mr="$med_rp" -v n="$runs" \
  -v mode="$( ((cold)) && echo cold || echo warm)" 'BEGIN {
  printf "best of %d (%s cache): cp %.0f MiB/s, repack %.0f MiB/s, ratio repack/cp = %.2f\n", n, mode, b / c / 2^20, b / r / 2^20, c / r
  printf "median (%s cache):    cp %.0f MiB/s, repack %.0f MiB/s, ratio repack/cp = %.2f\n", mode, b / mc / 2^20, b / mr / 2^20, mc / mr }'
