#!/usr/bin/env bash
# The real-CUDA run, in one command (docs/cuda.md): build llama.cpp v0.5.0
# with CUDA for sm_90 and the oracle against it, make the fixtures, run
# every case, write the results.  Also runs CPU-only here with the fake CUDA
# device to check the same steps before a device call.
#
# usage: device.sh CARRY OUT [cuda|cpu] [JOBS]
#
#   CARRY  the folder pack.sh made
#   OUT    where the results go (at most 8 files):
#            results.txt     every case: CASE line, the oracle's buffer lines,
#                            END rc ms (tests/cuda/results/ keeps it)
#            device.txt      the machine: GPU, driver, nvcc, CPU
#            log.txt         this script's progress
#            build.log.gz    the CMake and compiler output
#            graphs.txt.gz   the scheduler graphs of graphs.txt's cases
#            fixtures.sha256 the fixtures the cases ran on (compare.sh checks
#                            that it makes the same here)
# env:   BUDGET  seconds from the start after which no case starts (default
#                480: a device command may run 600 s, a case 60 s); WORK (default
#                /tmp/ggufmap-cuda); REUSE_BUILD=1 keeps a build already in
#                WORK/llama (a second local run)
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: device.sh CARRY OUT [cuda|cpu] [JOBS]" >&2; exit 2; }
CARRY=$(cd "$1" && pwd) OUT=$2 KIND=${3:-cuda} JOBS=${4:-$(nproc)}
WORK=${WORK:-/tmp/ggufmap-cuda}
T0=$(date +%s)
DEADLINE=$((T0 + ${BUDGET:-480}))
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(( $(date +%s) - T0 )) s] $*"; }

{
  echo "date: $(date -u +%FT%TZ)"
  echo "kind: $KIND jobs: $JOBS"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 || true
  nvcc --version 2>&1 | tail -n 2 || true
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
  gcc --version | head -n 1; cmake --version | head -n 1
} >"$OUT/device.txt" 2>&1
say "device: $(tr '\n' ';' <"$OUT/device.txt")"

# fixtures, while llama.cpp builds
FX=$WORK/fixtures
rm -rf "$FX" && mkdir -p "$FX"
(
  while IFS=$'\t' read -r name args; do
    # shellcheck disable=SC2086 # the maker's arguments split into words
    "$CARRY/ggufmap-fixture" $args -o "$FX/$name.gguf" >/dev/null || echo "fixture $name failed"
  done <"$CARRY/fixtures.tsv"
  (cd "$FX" && sha256sum --quiet -c "$CARRY/fixtures.sha256") && echo ok >"$FX/.verified"
) >"$WORK/fixtures.log" 2>&1 &
fx_pid=$!

say "building llama.cpp ($KIND, $JOBS jobs)"
if [ "${REUSE_BUILD:-0}" = 1 ] && [ -x "$WORK/llama/bin/ggufmap-oracle" ]; then
  say "reusing the build in $WORK/llama"
  build_rc=0
else
  "$CARRY/build_llama.sh" "$CARRY/llama-src.tar.gz" "$CARRY/oracle" "$WORK/llama" "$KIND" "$JOBS"
  build_rc=$?
fi
gzip -c "$WORK/llama/build.log" >"$OUT/build.log.gz" 2>/dev/null
[ $build_rc -eq 0 ] || { say "build failed"; exit 1; }
wait $fx_pid
[ -f "$FX/.verified" ] || { say "fixtures differ from fixtures.sha256:"; head -n 20 "$WORK/fixtures.log"; exit 1; }
say "fixtures: $(ls "$FX" | grep -c gguf) made, sha256 equal to this repository's"
cp "$CARRY/fixtures.sha256" "$OUT/fixtures.sha256"

RES=$WORK/res
rm -rf "$RES" && mkdir -p "$RES"
export CASES=$CARRY/cases.tsv FX RES DEADLINE GRAPHS=$CARRY/graphs.txt
export ORACLE=$WORK/llama/bin/ggufmap-oracle GGUFMAP_ORACLE_BACKEND_DIR=$WORK/llama/no-dl-backends
ORACLE_EXTRA=""
[ "$KIND" = cpu ] && ORACLE_EXTRA="--fake-gpu cuda"
export ORACLE_EXTRA
n=$(wc -l <"$CASES")
say "running $n cases, $JOBS at a time, none started after $((DEADLINE - T0)) s"
seq 1 "$n" | xargs -P "$JOBS" -n 1 "$CARRY/run_case.sh"
say "cases done"

: >"$OUT/results.txt"
: >"$WORK/graphs.txt"
for ((i = 1; i <= n; i++)); do
  if [ -f "$RES/$i.txt" ]; then cat "$RES/$i.txt" >>"$OUT/results.txt"
  else printf 'CASE\t%s\nSKIPPED lost\n' "$(sed -n "${i}p" "$CASES" | cut -f1)" >>"$OUT/results.txt"; fi
  if [ -f "$RES/$i.graph" ]; then
    printf '=== %s\n' "$(sed -n "${i}p" "$CASES" | cut -f1)" >>"$WORK/graphs.txt"
    cat "$RES/$i.graph" >>"$WORK/graphs.txt"
  fi
done
gzip -c "$WORK/graphs.txt" >"$OUT/graphs.txt.gz"
say "results: $(grep -c '^CASE' "$OUT/results.txt") cases:" \
    "$(grep -c '^RESULT ok' "$OUT/results.txt") ok," \
    "$(grep -c '^RESULT fail' "$OUT/results.txt") refused," \
    "$(grep -c '^RESULT abort' "$OUT/results.txt") aborted," \
    "$(grep -c '^RESULT crash' "$OUT/results.txt") crashed," \
    "$(grep -c '^SKIPPED' "$OUT/results.txt") skipped," \
    "$(grep '^END' "$OUT/results.txt" | grep -vc 'rc=[01] \|rc=134 ') with another exit status"
say "slowest: $(grep '^END' "$OUT/results.txt" | sed 's/.*ms=//' | sort -n | tail -n 3 | tr '\n' ' ') ms;" \
    "median $(grep '^END' "$OUT/results.txt" | sed 's/.*ms=//' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') ms"
