#!/usr/bin/env bash
# Smoke test for the oracle's --gguf-check mode.
# usage: tests/oracle/smoke.sh ORACLE_BIN WORKDIR
#
# Writes a hand-made 160-byte GGUF v3 (1 KV, 1 F32 tensor of 8 elements) and
# checks that ggml accepts it with the expected counts and data offset, then
# that a copy cut inside the tensor-info table is rejected.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: smoke.sh ORACLE_BIN WORKDIR" >&2; exit 2; }
ORACLE=$1
WORK=$2
mkdir -p "$WORK"

# little-endian unsigned integer of NBYTES bytes (bash printf emits \x00 as a NUL byte)
le() { # le NBYTES VALUE
    local n=$1 v=$2 i
    for ((i = 0; i < n; i++)); do
        # shellcheck disable=SC2059
        printf "\\x$(printf '%02x' $(((v >> (8 * i)) & 0xff)))"
    done
}
gstr() { le 8 ${#1}; printf '%s' "$1"; } # GGUF string: u64 length + bytes

tiny="$WORK/tiny.gguf"
{
    printf 'GGUF'
    le 4 3 # version
    le 8 1 # n_tensors
    le 8 1 # n_kv
    # KV: general.architecture = "llama" (type 8 = STRING)
    gstr general.architecture
    le 4 8
    gstr llama
    # tensor info: "t0", n_dims 1, ne[0] = 8, type 0 (F32), offset 0
    gstr t0
    le 4 1
    le 8 8
    le 4 0
    le 8 0
} >"$tiny.hdr"

hdr_size=$(wc -c <"$tiny.hdr")
[ "$hdr_size" -eq 103 ] || { echo "FAIL: header is $hdr_size bytes, expected 103" >&2; exit 1; }
{
    cat "$tiny.hdr"
    head -c $((128 - hdr_size)) /dev/zero # pad to the default alignment 32
    head -c 32 /dev/zero                  # 8 x f32 data
} >"$tiny"
rm -f "$tiny.hdr"

out=$("$ORACLE" --gguf-check "$tiny") || { echo "FAIL: oracle rejected $tiny: $out" >&2; exit 1; }
expect="GGUF ok n_tensors=1 n_kv=1 data_offset=128"
[ "$out" = "$expect" ] || { echo "FAIL: got '$out', expected '$expect'" >&2; exit 1; }
echo "ok: $out"

# cut inside the tensor-info table (ggml does not check the data section
# against the file size when no_alloc is set, so cutting data would pass)
head -c 90 "$tiny" >"$WORK/tiny-truncated.gguf"
set +e
out=$("$ORACLE" --gguf-check "$WORK/tiny-truncated.gguf")
rc=$?
set -e
if [ "$rc" -ne 1 ] || [ "$out" != "GGUF fail" ]; then
    echo "FAIL: truncated copy: rc=$rc out='$out'" >&2
    exit 1
fi
echo "ok: truncated copy -> $out"
