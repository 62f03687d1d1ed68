#!/usr/bin/env bash
# The exact compute graphs of the dense decoders and the encoders against
# the real llama.cpp v0.5.0 (the oracle): gemma3, mistral3, phi3, granite,
# command-r, cohere2, olmo2, starcoder2, exaone4, gemma2, gemma3n, bert,
# nomic-bert, t5, t5encoder (with their pooling heads under --embedding) and
# qwen3's rank pooling.  Every compute buffer must be exact (fit says
# `exact: true`) and equal to llama.cpp's to the byte, with KV, recurrent
# state and output buffers and the refusals as lib.sh compares them.
#
# usage: tests/fit/graphs_dense.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH [ARCH...]]
#
# Fixtures per architecture: as the maker makes it (n_embd 64, heads of
# 16), wider (n_embd 256, heads of 64, 3 layers: quantized caches need
# heads of whole blocks), q8_0 weights (rows CUDA pads, host weights the
# GPU's offload rule takes) and 6 layers (several GPU layers after CPU
# ones); variants the maker has no option for are made with gguf_kv.js
# (a window on olmo2, none on gemma3, granite without RoPE or scales, the
# other pooling types, ...), tied outputs, bert's classifier, gemma3n's
# shared-KV layers, qwen3's reranker.  Cases: a named list per architecture
# (CPU, fake Metal at -ngl 1, 2, 4, all, fake CUDA at -ngl 1, 2, all, -fa
# on/off/auto, quantized caches, -ub/-b, -np, --swa-full, -nkvo, op offload
# off, -c not a multiple of 256), two per variant, then N_PER_ARCH (default
# 1) drawn per architecture with a fixed seed.  ARCH... limits the run to
# those architectures.  GRAPHS_FULL=1 adds ten more named cases per
# architecture (-ngl 0, --kv-unified, --embedding on decoders, ...) and two
# per variant; GRAPHS_QUICK=1 keeps three per architecture (ctest's quick
# tier).  --max-ctx on four architectures: the answer fits, the next 256
# step does not, and llama.cpp allocates fit's buffers at both.  Exit
# status 1 on any difference or bound.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: graphs_dense.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH [ARCH...]]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 N_PER_ARCH=${5:-1}
shift 4; [ $# -gt 0 ] && shift
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

ALL=(gemma3 mistral3 phi3 granite command-r cohere2 olmo2 starcoder2 exaone4 gemma2 gemma3n bert nomic-bert t5 t5encoder)
ARCHS=("${ALL[@]}")
[ $# -gt 0 ] && ARCHS=("$@")

# ---------------------------------------------------------------- fixtures --
make_fixture() {
  local name=$1
  shift
  "$FIXTURE" "$@" -o "$WORK/$name.gguf" >/dev/null || { echo "FAIL: fixture $name: $*" >&2; exit 1; }
}
for a in "${ARCHS[@]}"; do
  make_fixture "$a" --arch "$a"
  make_fixture "$a-w" --arch "$a" --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3
  make_fixture "$a-q" --arch "$a" --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 512 --layers 3 --type q8_0 --vocab 1000
  make_fixture "$a-l" --arch "$a" --layers 6 --type f16
done

# variants the maker has no option for: metadata set or dropped (gguf_kv.js)
# variant NAME BASE ARGS...: $WORK/NAME.gguf from $WORK/BASE.gguf
VARIANTS=()
variant() {
  local name=$1 base=$2
  shift 2
  node "$HERE/gguf_kv.js" "$WORK/$base.gguf" "$WORK/$name.gguf" "$@" || { echo "FAIL: variant $name" >&2; exit 1; }
  VARIANTS+=("$name")
}
has() { local x; for x in "${ARCHS[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
# a tied output (token_embd's copy in the output layer's context), where the
# architecture may lack output.weight (the maker refuses the others)
for a in "${ARCHS[@]}"; do
  if "$FIXTURE" --arch "$a" --tied -o "$WORK/$a-t.gguf" >/dev/null 2>&1; then VARIANTS+=("$a-t"); fi
done
if has gemma3; then
  variant gemma3-nowin gemma3-w --drop gemma3.attention.sliding_window --drop gemma3.attention.sliding_window_pattern
  variant gemma3-cap gemma3 --set gemma3.final_logit_softcapping=f32:30
fi
if has olmo2; then variant olmo2-swa olmo2-w --set olmo2.attention.sliding_window=u32:64; fi
if has exaone4; then make_fixture exaone4-64 --arch exaone4 --layers 64; VARIANTS+=(exaone4-64); fi
# gemma3n's layers from 20 read layer 18's or 19's cache (Q only)
if has gemma3n; then make_fixture gemma3n-22 --arch gemma3n --layers 22; VARIANTS+=(gemma3n-22); fi
if has granite; then
  variant granite-norope granite-w --set granite.rope.scaling.finetuned=bool:false
  variant granite-noscale granite --drop granite.residual_scale --drop granite.embedding_scale
fi
if has command-r; then variant command-r-noscale command-r-w --drop command-r.logit_scale; fi
if has mistral3; then variant mistral3-temp mistral3-w --set mistral3.attention.temperature_scale=f32:0.1; fi
if has phi3; then variant phi3-long phi3-w --set phi3.rope.scaling.original_context_length=u32:128; fi
if has bert; then   # the other pooling heads: CLS, last token, none, and rank with the classifier
  variant bert-cls bert-w --set bert.pooling_type=u32:2
  variant bert-last bert --set bert.pooling_type=u32:3
  variant bert-none bert-w --set bert.pooling_type=u32:0
  make_fixture bert-rank --arch bert --cls 2 --n-embd 256 --n-head 4 --n-head-kv 4 --n-ff 256 --layers 3
  VARIANTS+=(bert-rank)
fi
if has nomic-bert; then variant nomic-bert-cls nomic-bert-w --set nomic-bert.pooling_type=u32:2; fi
if has t5encoder; then variant t5encoder-mean t5encoder-w --set t5encoder.pooling_type=u32:1; fi
# gemma4 (exact since issue 12, not graphs-dense's): its full-attention
# layers' rope_freqs copies are the same duplicated tensors (gm_w_layer)
make_fixture gemma4-12 --arch gemma4 --layers 12
make_fixture gemma4-e8 --arch gemma4 --n-expert 8 --layers 6
# qwen3's reranker: rank pooling with cls.output and a soft max (its trunk is
# exact already: fit_arch_llama.c)
make_fixture qwen3-cls --arch qwen3 --cls 2
VARIANTS+=(qwen3-cls)

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

# the oracle creates a pooled model's context with embeddings on (its pooling
# head in the graph): so does every case of one
pooled() { case $1 in bert*|nomic-bert*|t5encoder*|qwen3-cls*) echo --embedding ;; esac; }

# exact NAME FIXTURE ARGS...: lib.sh's check, and every compute buffer fit
# reports for the context must be exact (no BOUND line)
n_bound=0
exact() {
  local name=$1 fx=$2
  shift 2
  local e
  e=$(pooled "$fx")
  if [ -n "$e" ] && [[ " $* " != *" --embedding "* ]]; then set -- "$@" "$e"; fi
  if "$GGUFMAP" fit "$WORK/$fx.gguf" "$@" -nr --page 1B --json 2>/dev/null | node "$HERE/fit_lines.js" /dev/stdin |
     grep -q '^BOUND kind=compute'; then
    fails+=("$name ($fx $*): fit gives an upper bound, not the exact graph"); n_fail=$((n_fail + 1)); n_bound=$((n_bound + 1))
    return
  fi
  check "$name" "$fx" "$@"
}

# ------------------------------------------------------------- the cases --
# named: every placement and flag once per architecture (GRAPHS_QUICK=1:
# the first three, no variants, nothing drawn: the quick tier's check)
# (GRAPHS_FULL=1: every named case, 4 per variant; GRAPHS_DRAWN=1: only the
# drawn cases; GRAPHS_SEED: another walk; for campaigns beyond the test)
QUICK=${GRAPHS_QUICK:-0} DRAWN=${GRAPHS_DRAWN:-0} FULL=${GRAPHS_FULL:-0}
if [ "$QUICK" = 1 ]; then VARIANTS=(); N_PER_ARCH=0; fi
if [ "$DRAWN" = 1 ]; then VARIANTS=(); fi
for a in "${ARCHS[@]}"; do
  [ "$DRAWN" = 1 ] && continue
  exact "$a-cpu" "$a" -c 4096
  exact "$a-cuda-all" "$a-q" -c 8192 -fa off --device cuda -ngl all
  exact "$a-metal-2" "$a" -c 2048 --device metal -ngl 2
  [ "$QUICK" = 1 ] && continue
  exact "$a-metal-1" "$a-w" -c 4096 --device metal -ngl 1 -fa off
  exact "$a-cuda-2-q8" "$a-q" -c 4096 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl 2
  exact "$a-swa-full" "$a-w" -c 4096 --swa-full -np 2 --device metal -ngl all
  exact "$a-nkvo-fa" "$a-q" -c 4096 -nkvo -fa on --device metal -ngl 2
  exact "$a-ub-small" "$a-q" -c 777 -ub 16 -np 2 --device cuda -ngl 1
  # several GPU layers after CPU ones: the GPU layers share one copy of a
  # duplicated tensor (rope_freqs), the CPU ones the original
  exact "$a-deep-metal" "$a-l" -c 4096 -np 2 --device metal -ngl 4
  # issue 19: bert at -ngl 1 (output layer only, no tensor of bert's) runs nothing on the GPU without op offload
  exact "$a-ngl1-no-op-offload" "$a-w" -c 4096 --no-op-offload --device metal -ngl 1
  [ "$FULL" = 1 ] || continue
  exact "$a-cpu-w-np" "$a-w" -c 8192 -np 3 -fa off
  exact "$a-metal-0" "$a-w" -c 4096 --device metal -ngl 0
  exact "$a-metal-all" "$a-w" -c 16384 -np 2 --device metal -ngl all
  exact "$a-cuda-1" "$a-q" -c 4096 --device cuda -ngl 1
  exact "$a-metal-q4-ub" "$a-w" -c 3000 -ctk q4_0 -ctv q4_0 -ub 128 -b 256 --device metal -ngl 2
  exact "$a-kvu" "$a-w" -c 8192 -np 4 --kv-unified -fa off
  exact "$a-nkvo" "$a-w" -c 4096 -nkvo --device cuda -ngl all
  exact "$a-embd" "$a-w" -c 2048 --embedding --device metal -ngl 1
  exact "$a-no-op-offload" "$a-q" -c 4096 --no-op-offload --device cuda -ngl 2
  exact "$a-deep-cuda" "$a-l" -c 2048 -fa off --device cuda -ngl 5
done

# the variants: a placement of each kind
for v in "${VARIANTS[@]}"; do
  exact "$v-metal-2" "$v" -c 8192 -fa off --device metal -ngl 2
  exact "$v-cuda-all" "$v" -c 4096 --swa-full -np 2 --device cuda -ngl all
  [ "$FULL" = 1 ] || continue
  exact "$v-cpu" "$v" -c 4096 -np 2
  exact "$v-metal-1-nkvo" "$v" -c 2048 -nkvo --device metal -ngl 1
done

# gemma4 deep partial offloads: the GPU full-attention layers share a copy
if [ "$QUICK" != 1 ] && [ "$DRAWN" != 1 ]; then
  exact gemma4-12-metal-4 gemma4-12 -c 8192 --device metal -ngl 4
  exact gemma4-12-cuda-6 gemma4-12 -c 8192 -fa off --device cuda -ngl 6
  exact gemma4-e8-cuda-3 gemma4-e8 -c 131072 --swa-full -fa off --device cuda -ngl 3
fi

# a compute buffer the one-token reserve grows is re-allocated after the
# others and listed after them (t5: nothing on the GPU in the prompt graph)
if [ "$QUICK" != 1 ] && [ "$DRAWN" != 1 ] && has t5; then
  exact t5-realloc-order t5-l -c 5000 -np 3 -b 9 -fa on -ctk f32 -ctv f32 -nkvo --kv-unified --device cuda -ngl all
fi

# --max-ctx where compute is exact: fit's answer A fits the limit and A + 256
# does not, and at both llama.cpp allocates fit's buffers to the byte
# max_ctx NAME FIXTURE LIMIT ARGS...
max_ctx() {
  local name=$1 fx=$2 limit=$3 a rc1 rc2
  shift 3
  a=$("$GGUFMAP" fit "$WORK/$fx.gguf" -c 262144 "$@" --limit "$limit" --max-ctx -nr --page 1B --json 2>/dev/null |
      node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).max_ctx))')
  if ! [[ $a =~ ^[0-9]+$ ]] || [ "$a" -le 0 ]; then
    fails+=("$name: --max-ctx gave '$a'"); n_fail=$((n_fail + 1)); return
  fi
  "$GGUFMAP" fit "$WORK/$fx.gguf" -c "$a" "$@" --limit "$limit" -nr --page 1B >/dev/null 2>&1; rc1=$?
  "$GGUFMAP" fit "$WORK/$fx.gguf" -c $((a + 256)) "$@" --limit "$limit" -nr --page 1B >/dev/null 2>&1; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 3 ]; then
    fails+=("$name: --max-ctx $a: fit exits $rc1 there and $rc2 at $((a + 256)), want 0 and 3"); n_fail=$((n_fail + 1))
  fi
  exact "$name-at" "$fx" -c "$a" "$@"
  exact "$name-next" "$fx" -c $((a + 256)) "$@"
}
if [ "$QUICK" != 1 ] && [ "$DRAWN" != 1 ]; then
  has gemma3 && max_ctx gemma3-max-ctx gemma3-w 60M --device metal -ngl all
  has mistral3 && max_ctx mistral3-max-ctx mistral3-q 40M -np 2 --device cuda -ngl 2
  if has cohere2; then   # 4 layers: the last one full attention, whose scores grow with -c
    make_fixture cohere2-4 --arch cohere2 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 4
    max_ctx cohere2-max-ctx cohere2-4 100M -fa off --device metal -ngl all
  fi
  has t5 && max_ctx t5-max-ctx t5-w 120M --device cuda -ngl all
fi

# drawn: a fixed-seed walk through the options, N_PER_ARCH per architecture
ctxs=(256 777 4096 32768 100000)
nps=(1 1 2 3 4)
caches=("f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q4_0 q4_1" "q5_1 iq4_nl" "f16 q8_0" "q5_0 q5_0")
fas=(auto on off)
ubs=("" "" "-ub 32" "-ub 128" "-ub 512 -b 256" "-ub 64 -b 64")
flags=("" "" "--swa-full" "--kv-unified" "-nkvo")
devices=("" "--device metal -ngl 0" "--device metal -ngl 1" "--device metal -ngl 2" "--device metal -ngl all"
         "--device cuda -ngl 1" "--device cuda -ngl 2" "--device cuda -ngl all")
seed=${GRAPHS_SEED:-1717}
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for a in "${ARCHS[@]}"; do
  for ((i = 0; i < N_PER_ARCH; i++)); do
    pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
    pick 3; fx=$a; [ "$R" = 1 ] && fx=$a-w; [ "$R" = 2 ] && fx=$a-q
    case $ctk$ctv in *q*|*iq*) [ "$fx" = "$a" ] && fx=$a-w ;; esac
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    pick ${#nps[@]}; np=${nps[$R]}
    pick ${#fas[@]}; fa=${fas[$R]}
    pick ${#ubs[@]}; ub=${ubs[$R]}
    pick ${#flags[@]}; fl=${flags[$R]}
    pick ${#devices[@]}; dev=${devices[$R]}
    # shellcheck disable=SC2086 # the optional groups split into words
    exact "$a-$i" "$fx" -c "$ctx" -np "$np" -ctk "$ctk" -ctv "$ctv" -fa "$fa" $ub $fl $dev
  done
done

report graphs_dense
