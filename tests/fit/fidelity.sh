#!/usr/bin/env bash
# Fidelity of `ggufmap fit` against the real llama.cpp v0.5.0 (the oracle), at
# length on the four architectures whose compute graphs fit models exactly
# (llama, qwen3moe, gemma4, qwen4exp; archs.sh covers every other one).  The
# comparison (check, check_decode, report) is lib.sh's.
#
# usage: tests/fit/fidelity.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_RANDOM]
#
# For every configuration the oracle loads a fixture, creates the context
# with the same options (tests/oracle: --ctx, --np, --ctk, ...) and prints
# every buffer llama_init_from_model allocates; `ggufmap fit --json` must
# give the same list:
#   - the context's sizes (n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max,
#     flash attention as resolved), or the same refusal (CTX fail) or abort;
#   - every KV cache, recurrent-state and output buffer, in order, to the
#     byte, with its buffer type;
#   - every compute buffer (what the context holds once created), to the
#     byte when fit says it is exact, and never below it when fit says it is
#     an upper bound.
# Then for a set of batches the oracle decodes n_batch tokens asking every
# output: the output buffer must grow to fit's bytes_max and no other
# buffer may change (the reservation is the worst case).
#
# Configurations: a fixed list of named cases, then N_RANDOM (default 260)
# drawn with a fixed seed from architectures x contexts (256 .. 256K) x
# -np 1..8 x cache types x flash attention x SWA / unified / -nkvo /
# --embedding x CPU, fake Metal and fake CUDA at several -ngl.
# Prints a summary; exit status 1 on any difference.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: fidelity.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_RANDOM]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 N_RANDOM=${5:-260}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# ---------------------------------------------------------------- fixtures --
# name: fixture-maker arguments
declare -A FIX=(
  [L]="--arch llama --layers 2"
  [L64]="--arch llama --layers 3 --n-embd 256 --n-head 4 --n-head-kv 2 --type q4_0"
  [Lt]="--arch llama --layers 4 --tied --n-head-kv 1"
  [M]="--arch qwen3moe --layers 2"
  [M64]="--arch qwen3moe --layers 3 --head-dim 64 --n-expert 8 --n-expert-used 3"
  [G]="--arch gemma4 --layers 2"
  [G6]="--arch gemma4 --layers 6 --head-dim 64"
  [X]="--arch qwen4exp --layers 2"
  [X4]="--arch qwen4exp --layers 4 --head-dim 64"
)
for f in "${!FIX[@]}"; do
  # shellcheck disable=SC2086 # word splitting of the stored arguments is intended
  "$FIXTURE" ${FIX[$f]} -o "$WORK/$f.gguf" >/dev/null || { echo "FAIL: fixture $f: $FIXTURE ${FIX[$f]}" >&2; exit 1; }
done

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

# ------------------------------------------------------------- the cases --
# named: what the issue lists, each once
check llama-cpu-fa-off L -c 4096 -np 3 -fa off
check llama-metal-ngl2 L -c 4096 -np 3 -fa off --device metal -ngl 2
check llama-256k L -c 262144 -fa on --device metal -ngl all
check llama-256k-cuda-q8 L64 -c 262144 -ctk q8_0 -ctv q8_0 -fa on --device cuda -ngl all
check qwen3moe-cuda M -c 2048 -fa off --device cuda -ngl all
check gemma4-swa G6 -c 8192 -np 2 --device metal -ngl 4
check gemma4-swa-full G6 -c 8192 -np 2 --swa-full
check gemma4-v-widened G6 -c 2048 -fa off
check gemma4-unified G6 -c 4096 -np 4 --kv-unified
check qwen4exp-hybrid X4 -c 16384 -np 2 --device metal -ngl 3
check qwen4exp-q8-indexer-abort X -c 512 -ctk q8_0 -fa off
check refuse-quantized-v-no-fa L -c 512 -ctv q8_0 -fa off
check refuse-k-blocks L -c 512 -ctk q8_0 -fa on
check nkvo-metal M64 -c 4096 -nkvo --device metal -ngl all
check embeddings Lt -c 1024 --embedding --device cuda -ngl 2
check np8 X4 -c 32768 -np 8
check decode-fills-rounding L -c 4096 -np 3 -ub 100 -b 300
check_decode decode-llama L -c 1024 -b 64 -ub 32
check_decode decode-gemma4 G6 -c 2048 -b 128 -ub 64 --device metal -ngl all
check_decode decode-qwen4exp X4 -c 1024 -b 64 -ub 64 --device cuda -ngl all
check_decode decode-embd Lt -c 512 -b 96 -ub 32 --embedding
check_decode decode-qwen3moe-np M -c 1024 -np 2 -b 128 -ub 32 --device metal -ngl 1
check_decode decode-fa-off L64 -c 2048 -b 256 -ub 64 -fa off --device cuda -ngl 2
check_decode decode-swa-full G -c 512 -b 64 -ub 64 --swa-full

# drawn: a fixed-seed walk through the product of the options
fixtures=(L L64 Lt M M64 G G6 X X4)
qfixtures=(L64 M64 X4 G6 L64 M64 L) # heads of 64 take quantized caches; L's 16 are refused
ctxs=(256 777 4096 32768 262144)
nps=(1 1 2 3 8)
caches=("f16 f16" "f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q4_0 q4_0" "q4_1 q5_0" "q5_1 iq4_nl" "f16 q8_0"
        "q8_0 f16" "iq4_nl q4_1")
fas=(auto on off)
ubs=("" "-ub 32" "-ub 128" "-ub 512 -b 256")
flags=("" "" "--swa-full" "--kv-unified" "-nkvo" "--embedding")
devices=("" "" "--device metal -ngl 0" "--device metal -ngl 1" "--device metal -ngl 2" "--device metal -ngl all"
         "--device cuda -ngl 1" "--device cuda -ngl all")
seed=12345
# pick N: R = the next draw in [0, N) (no subshell: the seed must advance)
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for ((i = 0; i < N_RANDOM; i++)); do
  pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
  if [ "$ctk $ctv" = "f16 f16" ] || [ "$ctk $ctv" = "f32 f32" ] || [ "$ctk $ctv" = "bf16 bf16" ]; then
    pick ${#fixtures[@]}; fx=${fixtures[$R]}
  else
    pick ${#qfixtures[@]}; fx=${qfixtures[$R]}
  fi
  pick ${#ctxs[@]}; ctx=${ctxs[$R]}
  pick ${#nps[@]}; np=${nps[$R]}
  pick ${#fas[@]}; fa=${fas[$R]}
  pick ${#ubs[@]}; ub=${ubs[$R]}
  pick ${#flags[@]}; fl=${flags[$R]}
  pick ${#devices[@]}; dev=${devices[$R]}
  # shellcheck disable=SC2086 # the optional groups split into words
  check "random-$i" "$fx" -c "$ctx" -np "$np" -ctk "$ctk" -ctv "$ctv" -fa "$fa" $ub $fl $dev
done

# ---------------------------------------------------------------- report --
report fidelity
