#!/usr/bin/env bash
# A longer drawn campaign over the graphs-dense architectures than ctest's
# fit.graphs_dense runs (no ctest test: about 40 s per seed on 2 cores):
# odd shapes (n_embd 128/256/512, 2-6 layers, q4_0/q4_K/f16 weights,
# vocabularies to 3,000, a tied output) against odd options (-c 0/100/300,
# -ub 8/31/32/33/1000, -np 5/8, -b 9/3000, --kv-unified with -nkvo, op
# offload off) on the CPU and fake Metal/CUDA at several -ngl.  Every
# buffer is compared with the oracle's as lib.sh does (fit's compute here
# is exact: a bound would be accepted by lib.sh, graphs_dense.sh refuses
# them).  docs/fit.md, "The dense decoders and encoders", has its results.
#
# usage: tests/fit/graphs_dense_campaign.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH [SEED...]]
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: graphs_dense_campaign.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH [SEED...]]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 N=${5:-10}
shift 4; [ $# -gt 0 ] && shift
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(202 707 808 909)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"
pooled() { case $1 in bert*|nomic-bert*|t5encoder*) echo --embedding ;; esac; }

ARCHS=(gemma3 mistral3 phi3 granite command-r cohere2 olmo2 starcoder2 exaone4 gemma2 gemma3n bert nomic-bert t5 t5encoder)
shapes=("--n-embd 128 --n-head 2 --n-head-kv 1 --n-ff 384 --layers 5 --vocab 2000"
        "--n-embd 256 --n-head 8 --n-head-kv 8 --n-ff 512 --layers 4 --type q4_0 --vocab 700"
        "--n-embd 512 --n-head 4 --n-head-kv 2 --n-ff 1024 --layers 2 --type q4_K --vocab 3000 --tied"
        "--layers 6 --type f16")
for a in "${ARCHS[@]}"; do
  for i in "${!shapes[@]}"; do
    # shellcheck disable=SC2086 # the shape's options split into words
    "$FIXTURE" --arch "$a" ${shapes[$i]} -o "$WORK/$a-s$i.gguf" >/dev/null 2>&1 ||
      "$FIXTURE" --arch "$a" ${shapes[$i]/--tied/} -o "$WORK/$a-s$i.gguf" >/dev/null ||
      { echo "FAIL: fixture $a ${shapes[$i]}" >&2; exit 1; }
  done
done

ctxs=(0 100 300 1000 5000 20000 65536)
nps=(1 2 3 5 8)
ubs=("" "-ub 31" "-ub 32" "-ub 33" "-ub 8" "-ub 64 -b 100" "-ub 1000 -b 3000" "-b 9")
fas=(auto on off)
caches=("f16 f16" "f32 f32" "q8_0 q8_0" "q4_0 q4_0" "bf16 f16")
flags=("" "--swa-full" "--kv-unified" "-nkvo" "--no-op-offload" "-nkvo --kv-unified")
devices=("" "--device metal -ngl 1" "--device metal -ngl 3" "--device metal -ngl all" "--device cuda -ngl 1"
         "--device cuda -ngl 2" "--device cuda -ngl 4" "--device cuda -ngl all" "--device metal -ngl 0")
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for seed in "${SEEDS[@]}"; do
  for a in "${ARCHS[@]}"; do
    for ((i = 0; i < N; i++)); do
      pick 4; fx=$a-s$R
      pick ${#ctxs[@]}; c=${ctxs[$R]}
      pick ${#nps[@]}; np=${nps[$R]}
      pick ${#ubs[@]}; ub=${ubs[$R]}
      pick ${#fas[@]}; fa=${fas[$R]}
      pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
      pick ${#flags[@]}; fl=${flags[$R]}
      pick ${#devices[@]}; dev=${devices[$R]}
      # shellcheck disable=SC2086,SC2046 # the optional groups split into words
      check "$a-$seed-$i" "$fx" -c "$c" -np "$np" $ub -fa "$fa" -ctk "$ctk" -ctv "$ctv" $fl $dev $(pooled "$a")
    done
  done
done
report graphs_dense_campaign
