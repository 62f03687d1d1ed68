#!/usr/bin/env bash
# Checks of the oracle's fake GPU device (--fake-gpu) and its context report
# (CTX* lines) on tiny fixtures.
# usage: tests/oracle/fake_gpu_test.sh metal|cuda|overrides|context ORACLE_BIN FIXTURE_BIN WORKDIR
#
# Every result must hold on any x86-64 CPU: CPU_REPACK (AVX2-dependent) is
# either switched off (--no-repack) or only compared against a CPU-only run.
set -euo pipefail

[ $# -eq 4 ] || { echo "usage: fake_gpu_test.sh metal|cuda|overrides|context ORACLE_BIN FIXTURE_BIN WORKDIR" >&2; exit 2; }
MODE=$1 ORACLE=$2 FIXTURE=$3 WORK=$4
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

fail() { echo "FAIL: $*" >&2; [ -n "${OUT:-}" ] && printf '%s\n' "--- oracle output:" "$OUT" | grep -v TENSOR >&2; exit 1; }
ok() { echo "ok: $*"; }

# run ARGS...: oracle output in $OUT, must end with RESULT ok
run() {
    OUT=$("$ORACLE" "$@") || fail "oracle $* exited $?"
    [ "$(tail -n 1 <<<"$OUT")" = "RESULT ok" ] || fail "oracle $*: no RESULT ok"
}

# span_ok: every MAPPED buffer is [min off, max off+nbytes) of its TENSOR lines
span_ok() {
    awk '
        $1 == "MAPPED" || $1 == "ALLOC" { k++ }
        $1 == "MAPPED" { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[k, kv[1]] = kv[2] } mapped[k - 1] = 1 }
        $1 == "TENSOR" {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            b = v["buf"]; lo = v["off"] + 0; hi = v["off"] + v["nbytes"]
            if (!(b in mn) || lo < mn[b]) mn[b] = lo
            if (!(b in mx) || hi > mx[b]) mx[b] = hi
        }
        END {
            bad = 0
            for (b in mapped) {
                if (!(b in mn)) { print "buffer " b " has no TENSOR lines"; bad = 1; continue }
                if (mn[b] != f[b + 1, "first"] || mx[b] != f[b + 1, "last"] || mx[b] - mn[b] != f[b + 1, "size"]) {
                    print "buffer " b ": tensors span [" mn[b] "," mx[b] "), MAPPED says [" f[b + 1, "first"] "," f[b + 1, "last"] ")"
                    bad = 1
                }
            }
            exit bad
        }' <<<"$OUT" || fail "span rule"
}

# names BUFT: sorted names of the tensors in the buffers of type BUFT (TENSOR and ATENSOR lines)
names() {
    awk -v want="$1" '
        $1 == "MAPPED" || $1 == "ALLOC" { split($2, kv, "="); bt[k++] = kv[2] }
        $1 == "TENSOR" || $1 == "ATENSOR" {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            if (bt[v["buf"]] == want) print v["name"]
        }' <<<"$OUT" | sort
}

has() { grep -q -- "$1" <<<"$OUT"; }

# decode_same KIND M: the fake GPU computes (a CPU backend inside its own
# backend stream): a decode at ngl 0, 2 and all gives bit-identical logits to
# a CPU-only run (--no-repack: the repacked CPU kernels round differently)
decode_same() {
    local kind=$1 m=$2 ngl cpu_hash
    run --no-repack --decode 8 "$m"
    cpu_hash=$(sed -n 's/^DECODE ok .* hash=\([0-9a-f]*\) finite=1$/\1/p' <<<"$OUT")
    [ -n "$cpu_hash" ] || fail "CPU-only decode: no finite DECODE ok line"
    for ngl in 0 2 all; do
        run --fake-gpu "$kind" --ngl "$ngl" --no-repack --decode 8 "$m"
        has "^DECODE ok kind=logits n_tokens=8 n_out=[0-9]* hash=$cpu_hash finite=1$" ||
            fail "decode on the fake $kind GPU at ngl $ngl: not the CPU-only logits ($cpu_hash)"
    done
    ok "decode on the fake $kind GPU at ngl 0, 2, all: the CPU-only logits ($cpu_hash)"
}

case "$MODE" in
metal)
    M="$WORK/q4.gguf"
    "$FIXTURE" --arch llama --layers 4 --type q4_0 -o "$M" >/dev/null
    "$ORACLE" --fake-gpu metal --list-bufts | grep -q '^BUFT name=MTL0 dev=MTL0 kind=default$' || fail "--list-bufts lacks MTL0"

    run -t --fake-gpu metal --ngl all --no-repack "$M"
    span_ok
    has '^MAPPED buft=MTL0_Mapped file=0 ' || fail "ngl all: no MTL0_Mapped buffer"
    has '^LOG load_tensors:  MTL0_Mapped model buffer size = ' || fail "ngl all: no MTL0_Mapped log line"
    [ "$(names CPU_Mapped)" = "token_embd.weight" ] || fail "ngl all: CPU_Mapped should hold token_embd only"
    [ "$(names MTL0_Mapped | wc -l)" -eq 38 ] || fail "ngl all: MTL0_Mapped should hold 38 tensors"
    ok "ngl all: token_embd on CPU_Mapped, 38 tensors in MTL0_Mapped, spans match"

    run -t --fake-gpu metal --ngl 1 --no-repack "$M"
    span_ok
    [ "$(names MTL0_Mapped | tr '\n' ' ')" = "output.weight output_norm.weight " ] ||
        fail "ngl 1: MTL0_Mapped should hold the output layer only"
    ok "ngl 1 = output layer only"

    run -t --fake-gpu metal --ngl 2 --no-repack "$M"
    span_ok
    [ "$(names MTL0_Mapped | grep -c '^blk\.3\.')" -eq 9 ] || fail "ngl 2: MTL0_Mapped should hold all of blk.3"
    if names MTL0_Mapped | grep -q '^blk\.[012]\.'; then fail "ngl 2: blk.0-2 in MTL0_Mapped"; fi
    ok "ngl 2 = output + blk.3"

    run -t --fake-gpu metal --ngl 0 --no-repack "$M"
    ! has MTL0 || fail "ngl 0: a MTL0 buffer"
    ok "ngl 0: no MTL0 buffer"

    # output.weight first, output_norm last: the output layer's span is the whole data section
    M2="$WORK/q4-out-ends.gguf"
    "$FIXTURE" --arch llama --layers 4 --type q4_0 --move output.weight:first --move output_norm.weight:last \
        -o "$M2" >/dev/null
    run -t --fake-gpu metal --ngl 1 --no-repack "$M2"
    span_ok
    size=$(stat -c %s "$M2")
    has "^MAPPED buft=MTL0_Mapped file=0 first=[0-9]* last=$size " || fail "ngl 1, output at both ends: span should end at EOF"
    ok "ngl 1 with output.weight first: MTL0_Mapped reaches the end of the file"

    run --fake-gpu metal --ngl 2 --no-mmap --no-repack "$M"
    has '^ALLOC buft=MTL0 size=[0-9]* n_tensors=11$' || fail "--no-mmap: no ALLOC MTL0 with 11 tensors"
    ! has MAPPED || fail "--no-mmap: a MAPPED buffer"
    ok "--no-mmap: ALLOC MTL0"

    decode_same metal "$M"
    ;;
cuda)
    M="$WORK/q4.gguf"
    "$FIXTURE" --arch llama --layers 4 --type q4_0 -o "$M" >/dev/null
    bufts=$("$ORACLE" --fake-gpu cuda --list-bufts)
    grep -q '^BUFT name=CUDA0 dev=CUDA0 kind=default$' <<<"$bufts" || fail "--list-bufts lacks CUDA0"
    grep -q '^BUFT name=CUDA_Host dev=CUDA0 kind=host$' <<<"$bufts" || fail "--list-bufts lacks CUDA_Host"

    run -t --fake-gpu cuda --ngl 2 "$M"
    span_ok
    has '^ALLOC buft=CUDA0 size=[0-9]* n_tensors=11$' || fail "ngl 2: no ALLOC CUDA0 with 11 tensors"
    ! has 'CPU_REPACK' || fail "ngl 2: CPU_REPACK although CUDA_Host precedes it"
    ! has 'CUDA_Host' || fail "ngl 2: CUDA_Host under mmap (should be demoted to CPU)"
    # CPU_Mapped spans the GPU-side output tensors (foreign, they sit between token_embd and blk.0)
    [ "$(names CPU_Mapped | wc -l)" -eq 28 ] || fail "ngl 2: CPU_Mapped should hold 28 tensors"
    ok "ngl 2: ALLOC CUDA0 (11 tensors), every CPU weight in CPU_Mapped, no CPU_REPACK"

    # CUDA0's size: 128-byte alignment and CUDA's 512-element row padding of quantized rows
    has '^ALLOC buft=CUDA0 size=34432 ' || fail "ngl 2: CUDA0 size should be 34432 (ggml-cuda get_alloc_size)"
    ok "CUDA0 size 34432"

    # --no-host gives the CPU list of a CPU-only run back (CPU_REPACK iff the CPU repacks)
    cpu_only=$("$ORACLE" "$M")
    run --fake-gpu cuda --ngl 2 --no-host "$M"
    if grep -q CPU_REPACK <<<"$cpu_only"; then
        has '^ALLOC buft=CPU_REPACK ' || fail "--no-host: CPU_REPACK should reappear"
        ok "--no-host: CPU_REPACK reappears"
    else
        ok "--no-host: (this CPU does not repack q4_0; REPACK check skipped)"
    fi

    run --fake-gpu cuda --ngl 2 --no-mmap "$M"
    has '^ALLOC buft=CUDA_Host size=[0-9]* n_tensors=28$' || fail "--no-mmap: no ALLOC CUDA_Host with 28 tensors"
    has '^ALLOC buft=CUDA0 size=34432 n_tensors=11$' || fail "--no-mmap: no ALLOC CUDA0"
    ok "--no-mmap: CUDA_Host keeps the CPU weights"

    decode_same cuda "$M"
    ;;
overrides)
    M="$WORK/moe.gguf"
    "$FIXTURE" --arch qwen3moe --layers 3 --type q4_0 -o "$M" >/dev/null

    run -t --fake-gpu metal --ngl all --no-repack --cpu-moe "$M"
    span_ok
    ! names MTL0_Mapped | grep -q '_exps\.' || fail "--cpu-moe: expert weights on MTL0"
    [ "$(names CPU_Mapped | grep -c '_exps\.')" -eq 9 ] || fail "--cpu-moe: 9 expert weights expected on CPU"
    ok "--cpu-moe: all 9 expert tensors on CPU"

    run -t --fake-gpu metal --ngl all --no-repack --n-cpu-moe 1 "$M"
    span_ok
    [ "$(names CPU_Mapped | grep '_exps\.' | tr '\n' ' ')" = \
      "blk.0.ffn_down_exps.weight blk.0.ffn_gate_exps.weight blk.0.ffn_up_exps.weight " ] ||
        fail "--n-cpu-moe 1: blk.0 experts only should be on CPU"
    ok "--n-cpu-moe 1: blk.0 experts on CPU"

    # command-line order: the first matching override wins
    run -t --fake-gpu metal --ngl all --no-repack --ot 'blk\.0\.ffn_up_exps=MTL0' --n-cpu-moe 1 "$M"
    names MTL0_Mapped | grep -qx 'blk.0.ffn_up_exps.weight' || fail "--ot before --n-cpu-moe should win"
    run -t --fake-gpu metal --ngl all --no-repack --n-cpu-moe 1 --ot 'blk\.0\.ffn_up_exps=MTL0' "$M"
    names CPU_Mapped | grep -qx 'blk.0.ffn_up_exps.weight' || fail "--n-cpu-moe before --ot should win"
    ok "overrides apply in command-line order"

    # comma list, MTL0 override at ngl 0, token_embd moved to the GPU
    run -t --fake-gpu metal --ngl 0 --no-repack --ot 'token_embd=MTL0,blk\.1\.attn_q\.=MTL0' "$M"
    span_ok
    [ "$(names MTL0_Mapped | tr '\n' ' ')" = "blk.1.attn_q.weight token_embd.weight " ] ||
        fail "--ot comma list: MTL0_Mapped should hold token_embd and blk.1.attn_q"
    ok "--ot A=MTL0,B=MTL0 at ngl 0"

    run -t --fake-gpu cuda --ngl 0 --ot 'blk\.2\.=CUDA0' "$M"
    has '^ALLOC buft=CUDA0 ' || fail "--ot =CUDA0 at ngl 0: no CUDA0 buffer"
    ok "--ot =CUDA0 at ngl 0"

    if "$ORACLE" --fake-gpu metal --ot 'x=CPU,' "$M" >/dev/null 2>&1; then fail "--ot with an empty item accepted"; fi
    if "$ORACLE" --fake-gpu metal --ot 'x=NOPE' "$M" >/dev/null 2>&1; then fail "--ot with an unknown buft accepted"; fi
    ok "bad --ot values rejected"
    ;;
context)
    # llama fixture: 2 layers, n_embd 64, 4 heads, 2 KV heads of 16, vocabulary 300
    M="$WORK/llama.gguf"
    "$FIXTURE" --arch llama --layers 2 -o "$M" >/dev/null

    # every label agrees with the libllama function that allocated the buffer
    labels_ok() {
        awk '$1 == "CTXBUF" || $1 == "DECBUF" {
                kind = ""; via = ""
                for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "kind") kind = kv[2]; if (kv[1] == "via") via = kv[2] }
                want["kv"] = "llama_kv_cache::llama_kv_cache"; want["rs"] = "llama_memory_recurrent::llama_memory_recurrent"
                want["output"] = "llama_context::output_reserve"; want["compute"] = "llama_context::graph_reserve"
                if (!(kind in want) || (via != want[kind] && !(kind == "compute" && $1 == "DECBUF"))) { print "bad label: " $0; bad = 1 }
             }
             END { exit bad }' <<<"$OUT" || fail "a CTXBUF label disagrees with its via="
    }
    # CTXTOTAL = the CTXBUF lines of that kind and buft minus the CTXFREE ones
    totals_ok() {
        awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } key = v["kind"] " " v["buft"] }
             $1 == "CTXBUF" { sum[key] += v["size"] } $1 == "CTXFREE" { sum[key] -= v["size"] }
             $1 == "CTXTOTAL" { tot[key] = v["size"] }
             END { for (k in sum) if (sum[k] != tot[k] + 0) { print k ": buffers " sum[k] ", total " tot[k]; bad = 1 }
                   for (k in tot) if (!(k in sum)) { print k ": total without buffers"; bad = 1 }
                   exit bad }' <<<"$OUT" || fail "CTXTOTAL is not the sum of the live CTXBUF lines"
    }

    run --ctx 1024 --np 2 --fa off "$M"
    labels_ok
    totals_ok
    # K and V rows: 2 KV heads x 16 x f16 = 64 bytes; 2 streams of pad(1024/2, 256) = 512 cells; 2 layers
    has '^CTXTOTAL kind=kv buft=CPU size=262144 n_buffers=1$' || fail "KV cache should be 2*2*64*512*2 = 262144 bytes"
    has '^CTXTOTAL kind=output buft=CPU size=2400 n_buffers=1$' || fail "output buffer should be 2 rows of 300 floats"
    has '^CTXTOTAL kind=compute buft=CPU ' || fail "no CPU compute buffer"
    has '^CTXLOG llama_kv_cache: *CPU KV buffer size = *0.25 MiB$' || fail "llama.cpp's log should say 0.25 MiB of KV"
    has '^CTX ok n_ctx=1024 n_ctx_seq=512 n_batch=1024 n_ubatch=512 n_seq_max=2 fa=off$' || fail "effective sizes"
    ok "CPU: kv 262144, output 2400, compute; labels and totals consistent"

    run --fake-gpu metal --ngl all --ctx 1024 --fa auto "$M"
    labels_ok
    totals_ok
    has '^CTXTOTAL kind=kv buft=MTL0 size=262144 n_buffers=1$' || fail "ngl all: the KV cache should be in MTL0"
    has '^CTXTOTAL kind=compute buft=MTL0 ' || fail "ngl all: no MTL0 compute buffer"
    has '^CTX ok .* fa=on$' || fail "fa auto on the fake Metal device should resolve to on"
    ok "fake Metal, ngl all: KV and compute on MTL0, flash attention auto -> on"

    run --fake-gpu cuda --ngl all --nkvo --ctx 1024 "$M"
    totals_ok
    has '^CTXTOTAL kind=kv buft=CPU size=262144 n_buffers=1$' || fail "--nkvo: the KV cache should stay on the CPU"
    has '^CTXTOTAL kind=compute buft=CUDA_Host ' || fail "fake CUDA: the CPU's compute buffer should be CUDA_Host"
    ok "fake CUDA --nkvo: KV on CPU, CPU compute buffer in CUDA_Host"

    # the output buffer grows at the first decode that asks for more rows
    run --ctx 256 --b 16 --ub 16 --decode 16 --logits-all "$M"
    has '^DECFREE kind=output buft=CPU size=1200$' || fail "decode: the 1-row output buffer should be freed"
    has '^DECBUF kind=output buft=CPU size=19200 via=llama_context::output_reserve$' ||
        fail "decode: the output buffer should grow to 16 rows of 300 floats"
    has '^DECODE ok kind=logits n_tokens=16 ' || fail "decode failed"
    ok "decode with 16 outputs: output buffer 1200 -> 19200"

    # llama.cpp refuses a quantized V cache without flash attention
    OUT=$("$ORACLE" --ctx 512 --ctv q8_0 --fa off "$M") && fail "quantized V without FA accepted"
    has '^CTX fail$' || fail "quantized V without FA: no CTX fail"
    has '^CTXLOG ERROR .*quantized V cache requires flash_attn' || fail "quantized V without FA: reason not reported"
    [ "$(tail -n 1 <<<"$OUT")" = "RESULT fail" ] || fail "quantized V without FA: no RESULT fail"
    ok "quantized V without flash attention: CTX fail with llama.cpp's reason"

    # a bare --decode keeps its old output: no CTX lines
    run --decode 4 "$M"
    ! has '^CTX' || fail "bare --decode printed context lines"
    ok "bare --decode: no context report"
    ;;
*)
    echo "unknown mode $MODE" >&2
    exit 2
    ;;
esac
