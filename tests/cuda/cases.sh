#!/usr/bin/env bash
# The fixtures and the cases of the real-CUDA comparison (docs/cuda.md).
#
# usage: cases.sh fixtures FIXTURE_BIN   one line per fixture: NAME<TAB>MAKER ARGS
#        cases.sh cases FIXTURE_BIN      one line per case:
#                                        NAME<TAB>FIXTURE<TAB>ENV<TAB>FIT ARGS
#
# Both lists are deterministic (a fixed-seed walk, no clock, no randomness
# from the environment): the device records llama.cpp's buffers for these
# cases, tests/cuda/compare.sh runs `ggufmap fit` on the same ones here.
# FIT ARGS are ggufmap fit's flags (always --device cuda and -ngl); ENV is
# '-' or VAR=VALUE for llama.cpp (GGML_CUDA_DISABLE_FUSION=1: the same case
# without CUDA's fused-MoE lifetimes).
#
# Fixtures, per architecture of `ggufmap-fixture --list-archs` (46):
#   A-f16, A-q8_0, A-q4_0, A-q4_K  n_embd 256, 4 heads of 64, 2 KV heads,
#                                  n_ff 256, 3 layers, matmul weights of
#                                  that type (q4_K rows need 256 columns)
#   A-n                            the maker's default (n_embd 64, heads of
#                                  16, f32): a head size CUDA has no flash
#                                  attention kernel for
#   A-h128 (7 archs)               n_embd 512, 4 heads of 128, 1 KV head
#                                  (GQA 4), q8_0: the common head size
# Cases, in the order the device runs them (the most telling first):
#   named   one per CUDA rule of docs/cuda.md
#   exact   the 7 architectures with an exact compute graph, 64 drawn each
#           over -c, -np, -ctk/-ctv, -fa, -ub, -b, --swa-full, -kvu, -nkvo,
#           --embedding, -cmoe, --no-op-offload, -ngl 0/1/2/3/all
#   weights every architecture x 4 weight types x -ngl all and 2, + f16 at
#           -ngl 0 (each with a context)
#   drawn   every other architecture, 5 drawn as `exact` does
#   more    every architecture, 4 more drawn (y-A-I)
#   nofusion the cases above of MoE architectures with a GPU layer, again
#           with GGML_CUDA_DISABLE_FUSION=1
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: cases.sh fixtures|cases FIXTURE_BIN" >&2; exit 2; }
WHAT=$1 FIXTURE=$2
mapfile -t ARCHS < <("$FIXTURE" --list-archs | awk 'NR > 1 { print $1 }')
[ "${#ARCHS[@]}" -ge 46 ] || { echo "cases.sh: ggufmap-fixture lists ${#ARCHS[@]} architectures, want 46" >&2; exit 1; }
EXACT=(llama qwen2 qwen3 smollm3 qwen3moe gemma4 qwen4exp)
TYPES=(f16 q8_0 q4_0 q4_K)
is_moe() {
  case $1 in
    qwen3moe|qwen4exp|gpt-oss|qwen2moe|olmoe|phimoe|ernie4_5-moe|minimax-m2|granitemoe|glm4moe|step35|\
    cohere2moe|hy_v3|deepseek2|deepseek32|glm-dsa|qwen35moe|qwen3next|nemotron_h_moe) return 0 ;;
  esac
  return 1
}
is_exact() { local e; for e in "${EXACT[@]}"; do [ "$e" = "$1" ] && return 0; done; return 1; }
# the options a pooled model runs with (the oracle turns embeddings on for them)
pooled() { case $1 in bert|nomic-bert|t5encoder) echo --embedding ;; esac; }
# one Mamba, one FFN, one attention layer at least
min_layers() { case $1 in nemotron_h*) echo 3 ;; *) echo 2 ;; esac; }

if [ "$WHAT" = fixtures ]; then
  for a in "${ARCHS[@]}"; do
    for t in "${TYPES[@]}"; do
      printf '%s\t%s\n' "$a-$t" "--arch $a --type $t --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3"
    done
    printf '%s\t%s\n' "$a-n" "--arch $a --layers $(min_layers "$a")"
    if is_exact "$a"; then
      printf '%s\t%s\n' "$a-h128" "--arch $a --type q8_0 --n-embd 512 --n-head 4 --n-head-kv 1 --n-ff 512 --layers 3"
    fi
  done
  exit 0
fi
[ "$WHAT" = cases ] || { echo "cases.sh: fixtures or cases, not '$WHAT'" >&2; exit 2; }

CASES=()
# add NAME FIXTURE ARGS...: a case (ENV '-'); the architecture is the
# fixture's name up to its last '-'
add() {
  local name=$1 fx=$2
  shift 2
  CASES+=("$name"$'\t'"$fx"$'\t-\t'"$* $(pooled "${fx%-*}")")
}

# ------------------------------------------------------------------ named --
# (a) flash attention with a quantized cache: f16 copies of K and V
add a-llama-q8-4k llama-q4_K -c 4096 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-llama-q8-32k llama-q4_K -c 32768 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-llama-q4_0-32k-np2 llama-f16 -c 32768 -np 2 -ctk q4_0 -ctv q4_0 -fa on --device cuda -ngl all
add a-llama-mixed-kv llama-q8_0 -c 8192 -ctk q8_0 -ctv q4_0 -fa on --device cuda -ngl all
add a-llama-q5_1-partial llama-q4_0 -c 8192 -ctk q5_1 -ctv q5_1 -fa on --device cuda -ngl 2
add a-llama-h128-q8 llama-h128 -c 16384 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-llama-h128-q4_1 llama-h128 -c 4096 -ctk q4_1 -ctv q4_1 -fa on --device cuda -ngl all
add a-qwen2-q8-32k qwen2-q4_K -c 32768 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-qwen3-q4_0-ub128 qwen3-q8_0 -c 16384 -ctk q4_0 -ctv q4_0 -fa on -ub 128 --device cuda -ngl all
add a-qwen3moe-q8-32k qwen3moe-q4_K -c 32768 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-qwen4exp-q8 qwen4exp-f16 -c 8192 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-smollm3-q8-np3 smollm3-q8_0 -c 12288 -np 3 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-llama-f32-fa llama-f16 -c 8192 -ctk f32 -ctv f32 -fa on --device cuda -ngl all
add a-llama-bf16-fa llama-f16 -c 8192 -ctk bf16 -ctv bf16 -fa on --device cuda -ngl all
add a-llama-iq4_nl-fa llama-f16 -c 4096 -ctk iq4_nl -ctv iq4_nl -fa on --device cuda -ngl all
# ... and the kernel CUDA picks for a ubatch of 1 or 2 rows (the vector
# kernel: f16 copies only where no vector kernel was compiled for K/V)
add a-llama-ub1-q8 llama-q4_K -c 4096 -ub 1 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
add a-llama-ub2-q4_1 llama-q4_K -c 4096 -ub 2 -ctk q4_1 -ctv q4_1 -fa on --device cuda -ngl all
add a-llama-ub1-f32 llama-q8_0 -c 4096 -ub 1 -ctk f32 -ctv f32 -fa on --device cuda -ngl all
add a-llama-ub3-q4_0 llama-q8_0 -c 4096 -ub 3 -ctk q4_0 -ctv q4_0 -fa on --device cuda -ngl all
add a-llama-h128-ub1-q5_0 llama-h128 -c 8192 -np 4 -kvu -ub 1 -ctk q5_0 -ctv q5_0 -fa on --device cuda -ngl all
add a-llama-h128-ub2-bf16 llama-h128 -c 8192 -ub 2 -ctk bf16 -ctv bf16 -fa on --device cuda -ngl all
add a-qwen3moe-ub1-q4_0 qwen3moe-q8_0 -c 4096 -ub 1 -ctk q4_0 -ctv q4_0 -fa on --device cuda -ngl all
add a-qwen3-c777-q8 qwen3-f16 -c 777 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
# (b) fused MoE kernels keep tensors alive (and the same with fusion off, below)
add b-qwen3moe-all qwen3moe-q4_K -c 4096 --device cuda -ngl all
add b-qwen3moe-np4 qwen3moe-f16 -c 16384 -np 4 --device cuda -ngl all
add b-qwen3moe-partial qwen3moe-q8_0 -c 4096 --device cuda -ngl 2
add b-qwen3moe-n qwen3moe-n -c 4096 --device cuda -ngl all
add b-qwen3moe-cmoe qwen3moe-q4_0 -c 8192 -cmoe --device cuda -ngl all
add b-qwen4exp-all qwen4exp-q4_K -c 4096 --device cuda -ngl all
add b-gpt-oss-all gpt-oss-q8_0 -c 4096 --device cuda -ngl all
add b-deepseek2-all deepseek2-q4_K -c 4096 --device cuda -ngl all
add b-glm4moe-all glm4moe-f16 -c 4096 --device cuda -ngl all
# (c) -fa auto where CUDA has no kernel for the head size
add c-gemma4-auto gemma4-q4_K -c 8192 -fa auto --device cuda -ngl all
add c-gemma4-auto-partial gemma4-f16 -c 8192 -fa auto --device cuda -ngl 2
add c-deepseek2-auto deepseek2-f16 -c 4096 -fa auto --device cuda -ngl all
add c-deepseek32-auto deepseek32-q8_0 -c 4096 -fa auto --device cuda -ngl all
add c-glm-dsa-auto glm-dsa-q8_0 -c 4096 -fa auto --device cuda -ngl all
add c-llama-n-auto llama-n -c 4096 -fa auto --device cuda -ngl all
add c-llama-n-on llama-n -c 4096 -fa on --device cuda -ngl all
add c-qwen3moe-n-auto qwen3moe-n -c 4096 -fa auto --device cuda -ngl 2
add c-llama-h128-auto llama-h128 -c 4096 -fa auto --device cuda -ngl all
# (d) gemma4, flash attention on, a GPU layer reading a CPU layer's cache
add d-gemma4-on-ngl2 gemma4-q4_K -c 8192 -fa on --device cuda -ngl 2
add d-gemma4-on-ngl3 gemma4-f16 -c 8192 -fa on --device cuda -ngl 3
add d-gemma4-on-ngl1 gemma4-q8_0 -c 4096 -fa on --device cuda -ngl 1
add d-gemma4-on-all gemma4-q4_0 -c 4096 -fa on --device cuda -ngl all
add d-gemma4-off-ngl2 gemma4-q4_K -c 8192 -fa off --device cuda -ngl 2
# (e) SSM ops CUDA refuses keep their weights on the CPU
add e-nemotron_h-all nemotron_h-f16 -c 4096 --device cuda -ngl all
add e-nemotron_h-n nemotron_h-n -c 4096 --device cuda -ngl all
add e-nemotron_h_moe-all nemotron_h_moe-q8_0 -c 4096 --device cuda -ngl all
add e-mamba2-all mamba2-q4_K -c 4096 --device cuda -ngl all
add e-granitehybrid-all granitehybrid-f16 -c 4096 --device cuda -ngl all
add e-falcon-h1-all falcon-h1-q8_0 -c 4096 --device cuda -ngl all
add e-lfm2-all lfm2-f16 -c 4096 --device cuda -ngl all
add e-rwkv7-all rwkv7-f16 -c 4096 --device cuda -ngl all
add e-qwen35-all qwen35-q4_K -c 4096 --device cuda -ngl all
add e-qwen3next-all qwen3next-q8_0 -c 4096 --device cuda -ngl all

# --------------------------------------------------------- drawn (seeded) --
seed=20251203
# pick N: R = the next draw in [0, N) (no subshell: the seed must advance)
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
ctxs=(256 777 4096 4096 32768 262144)
nps=(1 1 1 2 3 4)
caches=("f16 f16" "f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q8_0 q8_0" "q4_0 q4_0" "q4_1 q4_1"
        "q5_0 q5_0" "q5_1 q5_1" "iq4_nl iq4_nl" "q8_0 f16" "f16 q4_0" "q4_0 q8_0")
fas=(auto auto on off)
ubs=("" "" "-ub 32" "-ub 128" "-ub 1024" "-b 256" "-b 64 -ub 64")
flags=("" "" "" "--swa-full" "-kvu" "-nkvo" "--no-op-offload")
ngls=(all all 0 1 2 3)
# draw A N [PREFIX]: N cases of architecture A named PREFIX-A-I (default x);
# fixtures A-TYPE, A-n and (exact) A-h128
draw() {
  local a=$1 n=$2 p=${3:-x} i fx ctk ctv ctx np fa ub fl ngl extra
  for ((i = 0; i < n; i++)); do
    pick 8
    case $R in 0|1) fx=$a-q4_K ;; 2) fx=$a-f16 ;; 3) fx=$a-q8_0 ;; 4) fx=$a-q4_0 ;; 5) fx=$a-n ;;
               *) if is_exact "$a"; then fx=$a-h128; else fx=$a-q8_0; fi ;; esac
    pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
    # quantized caches need heads of whole blocks: not the 16-wide heads
    if [ "$fx" = "$a-n" ] && { [ "$ctk" != "${ctk#q}" ] || [ "$ctv" != "${ctv#q}" ] || [ "${ctk:0:1}" = i ]; }; then
      fx=$a-q4_K
    fi
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    pick ${#nps[@]}; np=${nps[$R]}
    pick ${#fas[@]}; fa=${fas[$R]}
    pick ${#ubs[@]}; ub=${ubs[$R]}
    pick ${#flags[@]}; fl=${flags[$R]}
    pick ${#ngls[@]}; ngl=${ngls[$R]}
    extra=""
    pick 6
    if is_moe "$a" && [ "$R" -eq 0 ]; then extra=-cmoe; fi
    # a 256K context over several streams of f32 is GiBs of cache: keep it to f16 and smaller
    if [ "$ctx" = 262144 ] && { [ "$np" -gt 1 ] || [ "$ctk" = f32 ]; }; then ctx=32768; fi
    # shellcheck disable=SC2086 # the optional groups split into words
    add "$p-$a-$i" "$fx" -c $ctx -np $np -ctk $ctk -ctv $ctv -fa $fa $ub $fl $extra --device cuda -ngl $ngl
  done
}
for a in "${EXACT[@]}"; do draw "$a" 64; done

# ---------------------------------------------------------------- weights --
for a in "${ARCHS[@]}"; do
  for t in "${TYPES[@]}"; do
    for ngl in all 2; do
      pick 4
      case $R in
        0) add "w-$a-$t-$ngl" "$a-$t" -c 4096 --device cuda -ngl $ngl ;;
        1) add "w-$a-$t-$ngl" "$a-$t" -c 32768 -np 2 --device cuda -ngl $ngl ;;
        2) add "w-$a-$t-$ngl" "$a-$t" -c 8192 -fa off --device cuda -ngl $ngl ;;
        *) add "w-$a-$t-$ngl" "$a-$t" -c 16384 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl $ngl ;;
      esac
    done
  done
  add "w-$a-f16-0" "$a-f16" -c 4096 --device cuda -ngl 0
done

# ------------------------------------------------------------------ drawn --
for a in "${ARCHS[@]}"; do
  is_exact "$a" || draw "$a" 5
done

# ------------------------------------------------------------------- more --
# a second walk over every architecture (the second device run)
seed=20251204
for a in "${ARCHS[@]}"; do
  draw "$a" 4 y
done

# --------------------------------------------------------------- nofusion --
n=${#CASES[@]}
for ((i = 0; i < n; i++)); do
  IFS=$'\t' read -r name fx env args <<<"${CASES[$i]}"
  is_moe "${fx%-*}" || continue
  case " $args " in *" -ngl 0 "*) continue ;; esac
  CASES+=("$name~nofusion"$'\t'"$fx"$'\tGGML_CUDA_DISABLE_FUSION=1\t'"$args")
done

# one line per case, extra blanks squeezed
printf '%s\n' "${CASES[@]}" | sed 's/  */ /g; s/ $//'
