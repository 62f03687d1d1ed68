#!/usr/bin/env bash
# Smoke test for the arm64 oracle under qemu-user.
# usage: tests/oracle/arm64/smoke.sh RUNNER FIXTURE_BIN WORKDIR
#   RUNNER       DIR/bin/ggufmap-oracle-arm64-run (tests/oracle/arm64/setup.sh)
#   FIXTURE_BIN  ggufmap-fixture
#
# A 2-layer llama, Q4_0 matmul weights, n_embd 256, vocab 300 (300 % 4 == 0,
# 300 % 8 == 4), on the default Apple Silicon-like CPU (DOTPROD+I8MM, no SVE):
#   - the model loads and a CPU_REPACK ALLOC buffer exists;
#   - output.weight (300 rows) is repacked: the ARM rule is rows % 4 (x86: % 8);
#   - token_embd.weight (GET_ROWS, not MUL_MAT) is not;
#   - the layout is q4_0_4x4_q8_0 (the Linux package's armv8.2_2 variant has
#     DOTPROD but no MATMUL_INT8);
#   - --no-repack gives no CPU_REPACK buffer.
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: smoke.sh RUNNER FIXTURE_BIN WORKDIR" >&2; exit 2; }
RUN=$1
FIXTURE=$2
WORK=$3
mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

model="$WORK/q4_0.gguf"
rm -f "$model"
"$FIXTURE" --arch llama --type q4_0 --n-embd 256 --n-ff 512 --vocab 300 -o "$model" >/dev/null ||
    fail "ggufmap-fixture could not write $model"

start=$(date +%s%N)
out=$("$RUN" --layout -t "$model") || fail "oracle run failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$(tail -n 1 <<<"$out")" = "RESULT ok" ] || fail "last line is not 'RESULT ok': $(tail -n 1 <<<"$out")"
alloc=$(grep '^ALLOC buft=CPU_REPACK ' <<<"$out") || fail "no CPU_REPACK ALLOC line"
echo "ok: $alloc (${ms} ms under qemu)"

repack_id=$(grep -E '^(MAPPED|ALLOC) ' <<<"$out" | grep -n 'buft=CPU_REPACK ' | cut -d: -f1)
repack_id=$((repack_id - 1))
grep -qx "ATENSOR buf=$repack_id name=output.weight nbytes=[0-9]*" <<<"$out" ||
    fail "output.weight (300 rows) not in CPU_REPACK: the ARM rows % 4 rule did not apply"
! grep -q "^ATENSOR buf=[0-9]* name=token_embd.weight " <<<"$out" || fail "token_embd.weight was repacked"
echo "ok: output.weight repacked (rows % 4), token_embd.weight not"

layouts=$(grep '^LAYOUT ' <<<"$out" | sed 's/.* traits=//' | sort -u | tr '\n' ' ')
[ "$layouts" = "q4_0_4x4_q8_0 " ] || fail "repack layouts are '$layouts', expected q4_0_4x4_q8_0 only"
echo "ok: layout $layouts"

out=$("$RUN" --no-repack "$model") || fail "--no-repack run failed"
! grep -q 'CPU_REPACK' <<<"$out" || fail "--no-repack still made a CPU_REPACK buffer"
[ "$(tail -n 1 <<<"$out")" = "RESULT ok" ] || fail "--no-repack: last line is not 'RESULT ok'"
echo "ok: --no-repack -> $(grep -c '^MAPPED ' <<<"$out") MAPPED line(s), no CPU_REPACK"
