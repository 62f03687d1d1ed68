#!/usr/bin/env bash
# One case of the real-CUDA run (tests/cuda/device.sh starts this, many at a
# time): line IDX of $CASES through the oracle, its buffer lines kept in
# $RES/IDX.txt.
#
# usage: run_case.sh IDX
# env:   CASES (cases.tsv), FX (fixture folder), RES (result folder), ORACLE,
#        ORACLE_EXTRA (flags added to every run: '--fake-gpu cuda' when the
#        build is CPU-only), DEADLINE (epoch seconds: later cases are
#        recorded as SKIPPED), GRAPHS (a file of case names whose --graph
#        output is kept in $RES/IDX.graph)
#
# Kept, in the oracle's own format (tests/oracle/README.md) with only the
# fields the comparison reads: MAPPED/ALLOC buft size (weights), MODEL,
# CTXBUF kind buft size, CTXTOTAL, CTX, RESULT, ABORT, ERR (cut to 240
# characters), and llama.cpp's resolve_fused_ops warnings.
set -uo pipefail
IDX=$1
line=$(sed -n "${IDX}p" "$CASES")
IFS=$'\t' read -r name fx env fitargs oargs <<<"$line"
out=$RES/$IDX.txt
printf 'CASE\t%s\t%s\t%s\t%s\n' "$name" "$fx" "$env" "$fitargs" >"$out.tmp"
if [ "$(date +%s)" -ge "$DEADLINE" ]; then
  echo "SKIPPED deadline" >>"$out.tmp"
  mv "$out.tmp" "$out"
  exit 0
fi
envs=()
[ "$env" = - ] || envs=("$env")
graph=()
if [ -n "${GRAPHS:-}" ] && grep -qxF -- "$name" "$GRAPHS"; then graph=(--graph); fi
t0=$(date +%s%N)
raw=$RES/$IDX.raw
# shellcheck disable=SC2086 # the oracle's flags split into words
timeout 60 env ${envs[@]+"${envs[@]}"} "$ORACLE" --no-repack ${ORACLE_EXTRA:-} $oargs ${graph[@]+"${graph[@]}"} \
  "$FX/$fx.gguf" >"$raw" 2>&1
rc=$?
t1=$(date +%s%N)
awk '
  function field(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return " " $i; return "" }
  $1 == "MAPPED" || $1 == "ALLOC" { print $1 field("buft") field("size"); next }
  $1 == "CTXBUF" { print $1 field("kind") field("buft") field("size"); next }
  $1 == "CTXTOTAL" && $2 != "kind=compute" { next }
  $1 == "CTXFREE" || $1 == "CTXTOTAL" || $1 == "CTX" || $1 == "MODEL" || $1 == "RESULT" || $1 == "ABORT" { print; next }
  $1 == "ERR" || ($1 == "CTXLOG" && ($2 == "ERROR" || /resolve_fused_ops/)) { print substr($0, 1, 240) }
' "$raw" >>"$out.tmp"
printf 'END rc=%d ms=%d\n' "$rc" $(( (t1 - t0) / 1000000 )) >>"$out.tmp"
if [ ${#graph[@]} -gt 0 ]; then grep -E '^(GRAPH|GNODE|GLEAF|CTXBUF|CTXTOTAL|CTX )' "$raw" >"$RES/$IDX.graph"; fi
rm -f "$raw"
mv "$out.tmp" "$out"
