#!/usr/bin/env bash
# The compute buffers of the mixture-of-experts architectures (graphs-moe's
# exact graphs: src/fit_arch_moe.c, src/fit_arch_mla.c, src/fit_block_moe.c)
# against the real llama.cpp v0.5.0 (the oracle): every compute buffer equal
# to the byte and marked exact, beside the KV, output and refusal checks
# lib.sh makes for every case.
#
# usage: tests/fit/graphs_moe.sh GGUFMAP FIXTURE ORACLE WORKDIR [ARCH_REGEX] [N_PER_ARCH] [quick]
#
# Fixtures per architecture: as the maker makes it (n_embd 64, heads of 16,
# 4 experts), wider (n_embd 256, heads of 64, 3 layers: quantized caches
# need heads of whole blocks) and with 8 experts and q8_0 weights (the
# experts' rows decide what an offloaded MUL_MAT_ID copies).  Cases: a named
# list per architecture (the MTP draft contexts of the 7 with NextN layers
# among them), then N_PER_ARCH (default 8) drawn with a fixed seed
# over -c (256 .. 256K, not multiples of 256 too) x -np 1..4 x cache types x
# flash attention x -ub / -b x --swa-full / --kv-unified / -nkvo /
# --no-op-offload / --n-cpu-moe x CPU, fake Metal at -ngl 0, 1, 2, all, fake
# CUDA at -ngl 1, 2, all.  "quick" runs one named case per family (ctest
# label check).  Exit status 1 on any difference or any upper bound.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: graphs_moe.sh GGUFMAP FIXTURE ORACLE WORKDIR [ARCH_REGEX] [N_PER_ARCH] [quick]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 FILTER=${5:-.} N_PER_ARCH=${6:-8} MODE=${7:-full}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# the architectures with NextN (MTP) layers: their draft context's graph is exact too
MTP_ARCHS=" glm4moe deepseek2 deepseek32 glm-dsa hy_v3 cohere2moe step35 "
# the architectures whose compute graph is exact (the order of the brief)
EXACT=(gpt-oss glm4moe deepseek2 deepseek32 glm-dsa qwen2moe olmoe phimoe ernie4_5-moe minimax-m2 granitemoe hy_v3 cohere2moe step35)
ARCHS=()
for a in "${EXACT[@]}"; do [[ $a =~ $FILTER ]] && ARCHS+=("$a"); done
[ "${#ARCHS[@]}" -gt 0 ] || { echo "FAIL: no architecture matches '$FILTER'" >&2; exit 1; }

# ---------------------------------------------------------------- fixtures --
make_fixture() {
  local name=$1
  shift
  "$FIXTURE" "$@" -o "$WORK/$name.gguf" >/dev/null || { echo "FAIL: fixture $name: $*" >&2; exit 1; }
}
for a in "${ARCHS[@]}"; do
  make_fixture "$a" --arch "$a"
  make_fixture "$a-w" --arch "$a" --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3
  make_fixture "$a-e8" --arch "$a" --n-expert 8 --n-expert-used 3 --layers 3 --type q8_0
done

# variants the maker has no option for: metadata set or dropped (gguf_kv.js)
# variant NAME BASE ARGS...: $WORK/NAME.gguf from $WORK/BASE.gguf, when BASE's
# architecture is being tested
has() { [[ " ${ARCHS[*]} " == *" $1 "* ]]; }
variant() {
  local name=$1 base=$2
  shift 2
  [ -f "$WORK/$base.gguf" ] || return 0
  node "$HERE/gguf_kv.js" "$WORK/$base.gguf" "$WORK/$name.gguf" "$@" || { echo "FAIL: variant $name" >&2; exit 1; }
}
# GLM-5.2's indexer layout: a trained context of 1M turns on glm-dsa's
# default table (full indexers on layers 0, 1 and every fourth from 2; the
# others reuse the previous top-k, glm-dsa.cpp:6-26)
if has glm-dsa; then
  make_fixture glm-dsa-6 --arch glm-dsa --layers 6
  variant glm-dsa-1m glm-dsa-6 --set glm-dsa.context_length=u32:1048576
fi
# qwen3moe (exact since the first seven) with heads of 128 and 1 KV head, as
# tests/cuda's A-h128: there CUDA's fused top-k gating keeps the router's
# tensors past the peak (with GGML_CUDA_DISABLE_FUSION=1 llama.cpp's buffer
# is 8 MiB smaller; the other families' fixtures show no difference)
make_fixture qwen3moe-h128 --arch qwen3moe --type q8_0 --n-embd 512 --n-head 4 --n-head-kv 1 --n-ff 512 --layers 3
# DeepSeek V3's expert groups (build_moe_ffn's group top-k), the other
# gating functions, the attention temperature input
variant deepseek2-groups deepseek2-e8 --set deepseek2.expert_group_count=u32:2 --set deepseek2.expert_group_used_count=u32:1
variant deepseek2-softplus deepseek2-e8 --set deepseek2.expert_gating_func=u32:4 --set deepseek2.expert_weights_norm=bool:false
variant deepseek2-temp deepseek2 --set deepseek2.attention.temperature_scale=f32:0.1
# an indexer top-k beyond the cache: the top-k takes every cell (n_kv)
variant deepseek32-topk-all deepseek32 --set deepseek32.attention.indexer.top_k=u32:4096
variant deepseek32-groups deepseek32-e8 --set deepseek32.expert_group_count=u32:4 --set deepseek32.expert_group_used_count=u32:2
variant glm4moe-softmax-weight glm4moe-e8 --set glm4moe.expert_gating_func=u32:3 --set glm4moe.expert_weights_scale=f32:2.5
variant minimax-m2-softmax minimax-m2 --set minimax-m2.expert_gating_func=u32:1
# glm4moe with rope sections: M-RoPE, four positions per token
variant glm4moe-mrope glm4moe --set glm4moe.rope.dimension_sections=i32s:2,2,0,0
# per-layer expert counts: the top-k takes layer 0's, each layer sums its own views
variant glm4moe-used-per-layer glm4moe-e8 --set glm4moe.expert_used_count=i32s:3,2,3,2
# step35's limited SwiGLU (swiglu_clamp_exp / _shexp), cohere2moe with an RMS
# epsilon (RMS norms), granitemoe without the optional muP scales
variant step35-clamp step35 --set step35.swiglu_clamp_exp=f32:7 --set step35.swiglu_clamp_shexp=f32:7
variant cohere2moe-rms cohere2moe-w --set cohere2moe.attention.layer_norm_rms_epsilon=f32:0.000001
variant granitemoe-noscale granitemoe --drop granitemoe.residual_scale --drop granitemoe.embedding_scale
# graphs llama.cpp asserts on while the reserve builds them: no gating
# function (minimax-m2), no MoE step (ernie), n_rot != the head size
# (qwen2moe), the attention temperature in deepseek2's MTP block
variant minimax-m2-nogating minimax-m2 --drop minimax-m2.expert_gating_func
variant ernie-step0 ernie4_5-moe --set ernie4_5-moe.interleave_moe_layer_step=u32:0
variant qwen2moe-rot8 qwen2moe --set qwen2moe.rope.dimension_count=u32:8
# a tied output: token_embd's copy in the output layer's context
for a in "${ARCHS[@]}"; do "$FIXTURE" --arch "$a" --tied -o "$WORK/$a-t.gguf" >/dev/null 2>&1 || rm -f "$WORK/$a-t.gguf"; done
variant_case() { [ -f "$WORK/$2.gguf" ] && named "$@"; return 0; }

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"
REQUIRE_EXACT=all

# named NAME FIXTURE ARGS...: a case of the named list, skipped in quick mode unless marked
named() { [ "$MODE" = quick ] && return 0; check "$@"; }
quick() { check "$@"; }

# ------------------------------------------------------------- the cases --
for a in "${ARCHS[@]}"; do
  case $a in
    gpt-oss)
      quick gpt-oss-metal-2 gpt-oss-w -c 4096 -np 2 --device metal -ngl 2
      named gpt-oss-swa-full gpt-oss -c 8192 --swa-full -fa off
      named gpt-oss-sinks-fa-off gpt-oss-w -c 32768 -fa off --device cuda -ngl all
      named gpt-oss-q8 gpt-oss-w -c 32768 -ctk q8_0 -ctv q8_0 -fa on --device metal -ngl all
      named gpt-oss-e8-ncmoe gpt-oss-e8 -c 4096 -ncmoe 2 --device cuda -ngl all
      named gpt-oss-e8-no-op-offload gpt-oss-e8 -c 2048 --no-op-offload --device metal -ngl 2
      named gpt-oss-nkvo gpt-oss -c 4096 -np 3 -nkvo --device cuda -ngl all
      # the one-token graph grows CUDA0's buffer: llama.cpp re-allocates it after CUDA_Host's
      named gpt-oss-regrown-order gpt-oss-w -c 5000 -np 4 -ctv q8_0 -ub 32 -nkvo --device cuda -ngl all ;;
    glm4moe)
      quick glm4moe-cuda-2 glm4moe-w -c 8192 -np 2 --device cuda -ngl 2
      named glm4moe-e8-cpu-moe glm4moe-e8 -c 16384 -cmoe --device metal -ngl all
      named glm4moe-q8-fa-off glm4moe-w -c 4096 -ctk q8_0 -ctv f16 -fa off --device cuda -ngl all
      named glm4moe-ub-b glm4moe -c 3000 -np 4 -ub 64 -b 96 --device metal -ngl 1
      quick mtp-glm4moe glm4moe -c 8192 -np 2 --mtp
      named mtp-glm4moe-metal glm4moe-w -c 16384 --device metal -ngl 2 --mtp
      named mtp-glm4moe-cuda-1 glm4moe-e8 -c 4096 -np 3 --device cuda -ngl 1 --mtp ;;
    deepseek2)
      quick deepseek2-mla-metal deepseek2-w -c 8192 -fa off --device metal -ngl 2
      named deepseek2-mla-fa-on deepseek2-w -c 65536 -np 2 -fa on --device cuda -ngl all
      named deepseek2-q8 deepseek2-w -c 4096 -ctk q8_0 -ctv q8_0 -np 3 --kv-unified
      named deepseek2-e8-ncmoe deepseek2-e8 -c 2048 -ncmoe 2 --device cuda -ngl all
      named deepseek2-nkvo deepseek2 -c 4096 -nkvo -fa off --device metal -ngl all
      named mtp-deepseek2 deepseek2 -c 4096 -ctk q8_0 -ctv q8_0 --device cuda -ngl 1 --mtp
      named mtp-deepseek2-fa-off deepseek2-w -c 8192 -np 2 -fa off --device metal -ngl all --mtp ;;
    deepseek32)
      quick deepseek32-indexer deepseek32-w -c 32768 -np 3 -fa off --device metal -ngl 1
      named deepseek32-fa-on deepseek32-w -c 8192 -fa on --device cuda -ngl all
      named deepseek32-np-unified deepseek32 -c 4096 -np 4 --kv-unified --device cuda -ngl 2
      named deepseek32-top-k-short deepseek32 -c 256 -ub 4 -b 4
      quick mtp-deepseek32 deepseek32-w -c 32768 -fa off --device metal -ngl all --mtp ;;
    glm-dsa)
      named glm-dsa-nkvo glm-dsa -c 8192 -fa off -nkvo --device metal -ngl 0
      named glm-dsa-e8 glm-dsa-e8 -c 4096 -np 2 --device metal -ngl all
      named mtp-glm-dsa glm-dsa -c 8192 -np 2 -nkvo --device cuda -ngl all --mtp
      quick glm-dsa-shared-indexer glm-dsa-1m -c 8192 -np 2 --device metal -ngl 3
      named glm-dsa-shared-indexer-cuda glm-dsa-1m -c 4096 -fa off --device cuda -ngl all --mtp ;;
    qwen2moe)
      quick qwen2moe-gated-shexp qwen2moe-w -c 4096 -np 2 --device cuda -ngl all
      named qwen2moe-e8 qwen2moe-e8 -c 1000 -ub 100 --device metal -ngl 2 ;;
    olmoe)
      named olmoe-v-widened olmoe -c 2048 -fa off --device metal -ngl 2
      named olmoe-e8 olmoe-e8 -c 8192 -np 3 --device cuda -ngl 1 ;;
    phimoe)
      named phimoe-long-rope phimoe-w -c 4096 --device metal -ngl 2
      named phimoe-short-rope phimoe -c 128 --device cuda -ngl all ;;
    ernie4_5-moe)
      named ernie-dense-lead ernie4_5-moe-w -c 8192 -np 2 --device metal -ngl all ;;
    minimax-m2)
      named minimax-m2-sigmoid minimax-m2-w -c 16384 -fa off --device cuda -ngl 2 ;;
    granitemoe)
      named granitemoe-scales granitemoe-w -c 4096 -np 2 --device metal -ngl 2 ;;
    hy_v3)
      named hy_v3-nextn-rows hy_v3-w -c 32768 -np 3 --device metal -ngl 0
      named mtp-hy_v3 hy_v3 -c 32768 -np 3 --device metal -ngl 0 --mtp
      named mtp-hy_v3-cuda hy_v3-w -c 4096 -fa off --device cuda -ngl all --mtp ;;
    cohere2moe)
      quick cohere2moe-dense-first cohere2moe-w -c 16384 --swa-full --device cuda -ngl 2
      named cohere2moe-layer-norm cohere2moe -c 8192 -np 2 -fa off --device metal -ngl all
      named mtp-cohere2moe cohere2moe-w -c 8192 -fa off --mtp
      named mtp-cohere2moe-swa-full cohere2moe -c 4096 --swa-full --device cuda -ngl 2 --mtp ;;
    step35)
      named step35-swa-gate step35 -c 8192 -np 4 --kv-unified
      named step35-cuda step35-w -c 4096 --device cuda -ngl 2
      named mtp-step35-swa step35 -c 4096 --swa-full --device cuda -ngl all --mtp
      named mtp-step35-metal step35-w -c 8192 -np 2 --device metal -ngl 1 --mtp ;;
  esac
done
# CUDA's fused top-k gating (device_cuda.c), and the same with fusion off
if [ -f "$WORK/qwen3moe-h128.gguf" ]; then
  quick cuda-topk-gating qwen3moe-h128 -c 32768 -np 3 -ctk f32 -ctv f32 -fa on -ub 32 -nkvo -cmoe --device cuda -ngl all
  GGML_CUDA_DISABLE_FUSION=1 named cuda-topk-gating-off qwen3moe-h128 -c 32768 -np 3 -ctk f32 -ctv f32 -fa on -ub 32 -nkvo -cmoe --device cuda -ngl all
  named cuda-topk-gating-ngl2 qwen3moe-h128 -c 16384 -np 2 -ub 64 --device cuda -ngl 2
fi
# the metadata variants and tied outputs
variant_case deepseek2-groups deepseek2-groups -c 4096 -np 2 --device cuda -ngl 2
variant_case deepseek2-groups-mtp deepseek2-groups -c 2048 --device metal -ngl all --mtp
variant_case deepseek2-softplus deepseek2-softplus -c 4096 -fa off --device metal -ngl 3
variant_case deepseek2-temp deepseek2-temp -c 8192 -np 3 --device cuda -ngl all
variant_case deepseek32-groups deepseek32-groups -c 4096 --device metal -ngl 2
variant_case deepseek32-topk-all deepseek32-topk-all -c 1000 -np 2 --device cuda -ngl all --mtp
variant_case glm4moe-softmax-weight glm4moe-softmax-weight -c 4096 -np 2 --device cuda -ngl all --mtp
variant_case minimax-m2-softmax minimax-m2-softmax -c 2048 --device metal -ngl 1
variant_case glm4moe-mrope glm4moe-mrope -c 4096 -np 2 --device cuda -ngl 2 --mtp
variant_case glm4moe-used-per-layer glm4moe-used-per-layer -c 4096 --device metal -ngl 2 --mtp
variant_case step35-clamp step35-clamp -c 4096 --device cuda -ngl 2 --mtp
variant_case cohere2moe-rms cohere2moe-rms -c 8192 --device metal -ngl all --mtp
variant_case granitemoe-noscale granitemoe-noscale -c 4096 -np 2 --device cuda -ngl 1
variant_case minimax-m2-nogating-abort minimax-m2-nogating -c 2048
variant_case ernie-step0-abort ernie-step0 -c 2048 --device metal -ngl all
variant_case qwen2moe-rot8-abort qwen2moe-rot8 -c 2048 --device cuda -ngl 1
variant_case deepseek2-temp-mtp-abort deepseek2-temp -c 2048 --mtp
# experts kept on the CPU by -ot (the MUL_MAT_IDs offloaded from 32 rows), pinned host memory off, no mmap
variant_case glm4moe-ot-exps glm4moe-e8 -c 8192 -ot 'blk\.[12]\.ffn_.*_exps=CPU' --device cuda -ngl all
variant_case deepseek2-ot-exps deepseek2-e8 -c 4096 -ot '_exps=CPU' --device metal -ngl all --mtp
variant_case gpt-oss-no-host gpt-oss-e8 -c 4096 --no-host -ncmoe 1 --device cuda -ngl all
variant_case qwen2moe-no-mmap qwen2moe-e8 -c 4096 --no-mmap --device metal -ngl 2
for a in "${ARCHS[@]}"; do variant_case "$a-tied" "$a-t" -c 4096 --device metal -ngl 1; done
for a in "${ARCHS[@]}"; do variant_case "$a-tied-cuda" "$a-t" -c 2048 -np 2 --device cuda -ngl all; done
[ "$MODE" = quick ] && { report graphs_moe; exit; }

# --max-ctx where compute is exact: llama.cpp (all layers on the fake Metal,
# a full batch decoded) holds at most the limit on MTL0 at the answer R,
# more at R + 256
mtl0_bytes() {
  "$ORACLE" --no-repack --fake-gpu metal --ngl all --b 2048 --ub 512 --decode 2048 --logits-all "$@" \
    >"$WORK/maxctx.out" 2>&1
  node "$HERE/real_total.js" "$WORK/maxctx.out" MTL0 |
    node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).MTL0)'
}
max_ctx_case() {
  local fx=$1 limit=$(($2 * 1048576)) r at_r at_r1
  [ -f "$WORK/$fx.gguf" ] || return 0
  n_cases=$((n_cases + 1))
  r=$("$GGUFMAP" fit "$WORK/$fx.gguf" --device metal -c 65536 --limit "${limit}B" --max-ctx --page 1B -nr --json |
      node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).max_ctx)')
  at_r=$(mtl0_bytes --ctx "$r" "$WORK/$fx.gguf")
  at_r1=$(mtl0_bytes --ctx "$((r + 256))" "$WORK/$fx.gguf")
  if [ -n "$at_r" ] && [ -n "$at_r1" ] && [ "$at_r" -le "$limit" ] && [ "$at_r1" -gt "$limit" ]; then
    echo "max-ctx $fx at $2 MiB: $r (llama.cpp holds $at_r B there, $at_r1 B at -c $((r + 256)))"
  else
    fails+=("max-ctx $fx at $2 MiB: fit says $r; llama.cpp holds '$at_r' B at -c $r, '$at_r1' B at -c $((r + 256))")
    n_fail=$((n_fail + 1))
  fi
}
for a in gpt-oss glm4moe deepseek2; do has "$a" && max_ctx_case "$a-w" 24; done


# drawn: a fixed-seed walk through the options, N_PER_ARCH per architecture
ctxs=(256 777 4096 5000 32768 262144 0)
nps=(1 1 2 3 4)
caches=("f16 f16" "f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q4_0 q4_1" "q5_1 iq4_nl" "f16 q8_0" "q5_0 q5_0")
fas=(auto on off)
ubs=("" "" "-ub 32" "-ub 128" "-ub 512 -b 256" "-ub 64 -b 100" "-b 1024")
flags=("" "" "--swa-full" "--kv-unified" "-nkvo" "--no-op-offload" "-ncmoe 1" "--embedding")
devices=("" "" "--device metal -ngl 0" "--device metal -ngl 1" "--device metal -ngl 2" "--device metal -ngl all"
         "--device cuda -ngl 1" "--device cuda -ngl 2" "--device cuda -ngl all")
seed=${GRAPHS_MOE_SEED:-1207}   # another seed explores further: GRAPHS_MOE_SEED=N
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for a in "${ARCHS[@]}"; do
  for ((i = 0; i < N_PER_ARCH; i++)); do
    pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
    # MLA refuses different K and V types (llama-context.cpp:3776): draw one type there
    case $a in deepseek*|glm-dsa) ctv=$ctk ;; esac
    fx=$a
    pick 3; [ "$R" = 1 ] && fx=$a-e8
    if [ $((i % 2)) -eq 1 ] || [ "${ctk:0:1}" = q ] || [ "${ctv:0:1}" = q ] || [ "${ctv:0:1}" = i ]; then fx=$a-w; fi
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    pick ${#nps[@]}; np=${nps[$R]}
    pick ${#fas[@]}; fa=${fas[$R]}
    pick ${#ubs[@]}; ub=${ubs[$R]}
    pick ${#flags[@]}; fl=${flags[$R]}
    pick ${#devices[@]}; dev=${devices[$R]}
    mtp=""
    pick 3; [ "$R" = 0 ] && [[ $MTP_ARCHS == *" $a "* ]] && mtp=--mtp
    # a 256K context over several streams of the wider fixtures is a few GiB of cache in the oracle
    [ "$ctx" = 262144 ] && [ "$fx" != "$a" ] && ctx=32768
    # shellcheck disable=SC2086 # the optional groups split into words
    check "$a-$i" "$fx" -c "$ctx" -np "$np" -ctk "$ctk" -ctv "$ctv" -fa "$fa" $ub $fl $dev $mtp
  done
done

report graphs_moe
