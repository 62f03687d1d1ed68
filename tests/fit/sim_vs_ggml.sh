#!/usr/bin/env bash
# fit's shape-only ggml against the real ggml on small graphs: compiles
# tests/fit/ggml_probe.c against the oracle's ggml (headers and
# libggml-base of llama.cpp v0.5.0) and compares its buffer sizes with
# test_fit_sim --print (tests/unit/test_fit_sim.c builds the same graphs
# with fit_graph, fit_sched and fit_alloc).  Exit status 1 on any
# difference.
#
# usage: tests/fit/sim_vs_ggml.sh TEST_FIT_SIM ORACLE WORKDIR
set -uo pipefail

[ $# -eq 3 ] || { echo "usage: sim_vs_ggml.sh TEST_FIT_SIM ORACLE WORKDIR" >&2; exit 2; }
SIM=$1 ORACLE=$2 WORK=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(cd "$(dirname "$ORACLE")/.." && pwd)
LIB=$DIR/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[ -f "$LIB/libggml-base.so" ] || { echo "FAIL: no libggml-base.so under $LIB (tests/oracle/setup.sh)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
"${CC:-cc}" -std=c11 -I"$DIR/hdr/ggml/include" "$HERE/ggml_probe.c" -o "$WORK/ggml_probe" "$LIB/libggml-base.so" \
  -Wl,-rpath,"$LIB" -lm 2>"$WORK/cc.err" || { echo "FAIL: compiling ggml_probe.c: $(head -c 400 "$WORK/cc.err")" >&2; exit 1; }
"$WORK/ggml_probe" >"$WORK/ggml.out" || { echo "FAIL: ggml_probe exited $?" >&2; exit 1; }
"$SIM" --print >"$WORK/sim.out" || { echo "FAIL: $SIM --print exited $?" >&2; exit 1; }
if ! diff "$WORK/ggml.out" "$WORK/sim.out" >"$WORK/diff"; then
  echo "FAIL: fit's ggml model and ggml differ (< ggml, > fit):"
  cat "$WORK/diff"
  exit 1
fi
echo "sim_vs_ggml: ok: $(wc -l <"$WORK/ggml.out") graphs, buffer sizes equal to ggml's"
