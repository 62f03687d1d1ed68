#!/usr/bin/env bash
# Benchmark: the start-up of a command, `ggufmap --version`, beside programs
# that load no network library (issue 21): bench/noop.c built with libc
# alone, and linked with libcrypto as ggufmap is.  Each is run RUNS times
# (ggufmap-runstat: fork, exec, wait; its own start excluded), alternating;
# prints the median and the best wall time of each, the libraries each maps
# (ldd), and ggufmap's excess over the libcrypto program.  A second
# GGUFMAP binary (OLD) is measured beside them when given, e.g. a build of
# main from before libcurl was loaded on demand.
#   bench/startup.sh [BUILD_DIR] [RUNS] [OLD_GGUFMAP]
set -euo pipefail
build=${1:-build}
runs=${2:-300}
old=${3:-}
runstat="$build/bench/ggufmap-runstat"
progs=("$build/tools/ggufmap" "$build/bench/ggufmap-bench-noop-crypto" "$build/bench/ggufmap-bench-noop")
names=("ggufmap --version" "noop + libcrypto" "noop (libc only)")
if [[ -n $old ]]; then progs+=("$old"); names+=("ggufmap --version (OLD)"); fi
declare -A times
for ((i = 0; i < runs; i++)); do
  for k in "${!progs[@]}"; do
    args=(); [[ ${progs[$k]} == */ggufmap || $k == 3 ]] && args=(--version)
    w=$("$runstat" "${progs[$k]}" "${args[@]}" | sed -n 's/^wall_s=\([0-9.]*\).*/\1/p')
    times[$k]+="$w "
  done
done
printf '%-26s %10s %10s %6s\n' "program" "median ms" "best ms" "libs"
for k in "${!progs[@]}"; do
  read -r med best < <(tr ' ' '\n' <<<"${times[$k]}" | grep . | sort -g |
    awk '{ t[NR] = $1 } END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", m * 1000, t[1] * 1000 }')
  libs=$(ldd "${progs[$k]}" | grep -c '=>' || true)
  printf '%-26s %10s %10s %6s\n' "${names[$k]}" "$med" "$best" "$libs"
  meds[$k]=$med
done
awk -v g="${meds[0]}" -v c="${meds[1]}" -v n="${meds[2]}" 'BEGIN {
  printf "ggufmap --version - noop+libcrypto = %.3f ms (median); - noop = %.3f ms\n", g - c, g - n }'
