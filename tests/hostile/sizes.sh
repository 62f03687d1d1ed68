#!/usr/bin/env bash
# sizes.sh GGUFMAP FIXTURE WORKDIR - fit never prints a size that wrapped
# (issue 20 item 1: "arithmetic on sizes overflow-checked everywhere in
# fit").  Every fixture architecture, at -c, -b and -ub 2147483392 (2^31 -
# 256: the largest multiple of 256 that llama.cpp's std::stoi reads, as
# fit does), on the CPU and
# on a fake CUDA device with every layer:
#   - an architecture that attends (a KQ mask of n_kv x T = 2^64 elements,
#     or an encoder's [T, T]: 2^62 elements) is refused: exit 3, "64 PiB",
#     no compute row;
#   - one that does not (rwkv7, mamba2) answers, and its compute buffer at
#     2^31 - 256 tokens is at least 2^21 times the one at 512 tokens (4.2
#     million times the tokens: a wrapped product would be smaller).
# Both for the exact graphs (src/fit_graph.c's size check) and the upper
# bound (src/fit_bound.c's saturating sums).  Exit status 1 on any failure.
set -uo pipefail
export LC_ALL=C
[ $# -eq 3 ] || { echo "usage: sizes.sh GGUFMAP FIXTURE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 WORK=$3
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
BIG=2147483392
n=0 bad=0
fail() { echo "FAIL: $*"; bad=$((bad + 1)); }
# compute_mib OUT: the sum of the compute rows' MiB (the llama.cpp column)
compute_mib() { awk '$1 == "compute" { s += $4 } END { printf "%.2f\n", s }' "$1"; }
while read -r a _; do
  model=$WORK/$a.gguf
  "$FIXTURE" --arch "$a" -o "$model" >/dev/null 2>&1 || { fail "fixture $a"; continue; }
  extra=()
  case $a in bert|nomic-bert|t5encoder) extra=(--embedding) ;; esac
  for dev in cpu cuda; do
    d=()
    [ "$dev" = cuda ] && d=(--device cuda -ngl all)
    n=$((n + 1))
    out=$WORK/$a-$dev.out
    "$GGUFMAP" fit "$model" -c $BIG -b $BIG -ub $BIG "${d[@]}" "${extra[@]}" >"$out" 2>&1
    rc=$?
    case $a in
      rwkv7|mamba2)
        small=$WORK/$a-$dev-512.out
        "$GGUFMAP" fit "$model" -c 512 "${d[@]}" "${extra[@]}" >"$small" 2>&1
        [ $rc -eq 0 ] || { fail "$a $dev: exit $rc, want 0"; continue; }
        big_mib=$(compute_mib "$out") small_mib=$(compute_mib "$small")
        awk -v b="$big_mib" -v s="$small_mib" 'BEGIN { exit !(s > 0 && b >= s * 2097152) }' ||
          fail "$a $dev: compute $big_mib MiB at $BIG tokens against $small_mib MiB at 512"
        ;;
      *)
        if [ $rc -ne 3 ] || ! grep -q "64 PiB" "$out" || grep -q '^  compute ' "$out"; then
          fail "$a $dev: exit $rc, want 3 with a refusal beyond 64 PiB: $(sed -n 3p "$out")"
        fi
        ;;
    esac
  done
done < <("$FIXTURE" --list-archs | awk 'NR > 1')
echo "sizes: $n runs, $((n - bad)) as expected, $bad not"
[ $bad -eq 0 ]
