#!/usr/bin/env bash
# `ggufmap fit` on every architecture ggufmap-fixture makes, against the real
# llama.cpp v0.5.0 (the oracle): KV caches, recurrent state and output
# buffers to the byte, compute buffers exact (every fixture architecture and
# its MTP draft: each graphs_*.sh covers its family at length) or, for the
# variants still without a graph (lfm2 with a window or not causal, granite
# with vision inputs), an upper bound that is never below what llama.cpp
# allocates; llama.cpp's refusals and aborts alike.  The comparison is
# lib.sh's (fidelity.sh's).
#
# usage: tests/fit/archs.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH]
#
# Fixtures: every architecture of `ggufmap-fixture --list-archs` twice, as
# the maker makes it (n_embd 64, heads of 16) and wider (n_embd 256, heads
# of 64, 3 layers: quantized caches need heads of whole blocks).  Cases: a
# named list (the refusals, aborts and flash-attention resolutions fit
# models per architecture, the MTP draft contexts of the 11 archs with MTP
# layers, decodes of a full batch), then N_PER_ARCH
# (default 6) drawn per architecture with a fixed seed over -c 256 .. 256K x
# -np 1..4 x cache types x flash attention x -ub x --swa-full /
# --kv-unified / -nkvo x CPU, fake Metal at -ngl 0, 1, 2, all and fake
# CUDA at -ngl 1, all.  Prints a summary with the bounds' ratios; exit
# status 1 on any difference.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: archs.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_ARCH]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 N_PER_ARCH=${5:-6}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# ---------------------------------------------------------------- fixtures --
# shellcheck source=tests/fit/arch_fixtures.sh
. "$HERE/arch_fixtures.sh"
make_arch_fixtures

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

# ------------------------------------------------------------- the cases --
# named: each rule fit models per architecture, once
check t5-streams-abort t5 -c 4096 -np 2
check t5-unified t5 -c 4096 -np 2 --kv-unified
check t5-fa-off-partial t5 -c 2048 --device metal -ngl 2
check t5-fa-on-all t5 -c 2048 --device cuda -ngl all
check bert-mean-pool-abort bert -c 4096 -np 3 --embedding
check bert-mean-pool-whole bert -c 4096 -np 3 -ub 96 --embedding
check nomic-bert-metal nomic-bert -c 1024 -np 2 --embedding --device metal -ngl 2
check t5encoder-cuda t5encoder -c 1024 --embedding --device cuda -ngl all
check granitehybrid-fa-moves granitehybrid-w -c 4096 --device metal -ngl 2
check granitehybrid-fa-stays granitehybrid-w -c 4096 --device metal -ngl 3
check granitehybrid-nkvo-fa-moves granitehybrid-w -c 4096 -nkvo --device metal -ngl 3
check lfm2-fa-moves lfm2-w -c 4096 --device cuda -ngl 2
check nemotron_h-fa-moves nemotron_h-4 -c 4096 --device metal -ngl 2
check nemotron_h-nkvo nemotron_h-4 -c 4096 -nkvo --device cuda -ngl 3
check falcon-h1-nkvo-fa-off falcon-h1 -c 4096 -nkvo --device metal -ngl 2
check falcon-h1-nkvo-output-only falcon-h1 -c 4096 -nkvo --device metal -ngl 1
check deepseek2-mla-types deepseek2 -c 1024 -ctk q8_0 -ctv f16
check deepseek2-mla-fa-off deepseek2-w -c 65536 -np 2 -fa off --device cuda -ngl all
check deepseek32-indexer deepseek32-w -c 32768 -np 3 -fa off --device metal -ngl 1
check glm-dsa-indexer-nkvo glm-dsa -c 8192 -fa off -nkvo --device metal -ngl 0
check gemma2-softcap-256k gemma2 -c 262144 -fa off
check gemma3n-swa gemma3n-w -c 8192 -np 2 --device metal -ngl 2
check cohere2-dense-first cohere2moe-w -c 16384 --swa-full --device cuda -ngl 2
check step35-swa-array step35 -c 8192 -np 4 --kv-unified
check gpt-oss-q8 gpt-oss-w -c 32768 -ctk q8_0 -ctv q8_0 -fa on --device metal -ngl all
check qwen35-hybrid qwen35-w -c 32768 -np 4 --device cuda -ngl 2
check qwen3next-np qwen3next -c 8192 -np 3 -fa off
check mamba2-state mamba2-w -c 4096 -np 4 --device metal -ngl all
check rwkv7-state rwkv7 -c 4096 -np 3 -nkvo --device cuda -ngl all
check olmoe-v-widened olmoe -c 2048 -fa off --device metal -ngl 2
check qwen2-256k qwen2-w -c 262144 -ctk q4_0 -ctv q4_0 -fa on --device metal -ngl all
# --mtp: the MTP draft context (--spec-type draft-mtp) beside the main one,
# on one load with the MTP layers; llama.cpp refuses it without MTP layers
# and when the loader skips them (exaone4)
check mtp-glm4moe glm4moe -c 8192 -np 2 --mtp
check mtp-glm4moe-metal glm4moe-w -c 16384 --device metal -ngl 2 --mtp
check mtp-step35-swa step35 -c 4096 --swa-full --device cuda -ngl all --mtp
check mtp-cohere2moe cohere2moe-w -c 8192 -fa off --mtp
check mtp-hy_v3 hy_v3 -c 32768 -np 3 --device metal -ngl 0 --mtp
check mtp-deepseek2 deepseek2 -c 4096 -ctk q8_0 -ctv q8_0 --device cuda -ngl 1 --mtp
check mtp-deepseek32 deepseek32-w -c 32768 -fa off --device metal -ngl all --mtp
check mtp-glm-dsa glm-dsa -c 8192 -np 2 -nkvo --device cuda -ngl all --mtp
check mtp-qwen35 qwen35 -c 16384 --device metal -ngl all --mtp
check mtp-qwen35moe qwen35moe-w -c 4096 -np 4 --kv-unified --mtp
check mtp-qwen3next qwen3next -c 65536 -fa off --mtp
check mtp-nemotron_h_moe nemotron_h_moe -c 8192 --device cuda -ngl 2 --mtp
check mtp-exaone4-skipped exaone4 -c 4096 --mtp
check mtp-none llama -c 4096 --mtp
check smollm3-nope smollm3-5 -c 8192 -np 2 -fa off --device metal -ngl 3
check qwen3-cls-pooled qwen3-cls -c 2048 --embedding --device cuda -ngl all
check bound-lfm2-swa lfm2-swa -c 4096 -np 2 --device metal -ngl 2
check bound-lfm2-swa-full lfm2-swa -c 32768 --swa-full --device cuda -ngl all
check bound-lfm2-swa-cpu lfm2-swa -c 777 -fa off
check bound-lfm2-nc lfm2-nc -c 4096 --device metal -ngl 1
check bound-lfm2-nc-cuda lfm2-nc -c 2048 -np 3 -fa off --device cuda -ngl all
check bound-granite-vision granite-vision -c 4096 --device cuda -ngl all
check bound-granite-vision-metal granite-vision -c 8192 -np 2 --device metal -ngl 1
check bound-granite-vision-cpu granite-vision -c 1024 -ctk q8_0 -ctv q8_0
check_decode decode-qwen2 qwen2 -c 1024 -b 64 -ub 32
check_decode decode-deepseek2 deepseek2 -c 1024 -b 64 -ub 64 --device metal -ngl all
check_decode decode-gemma2 gemma2 -c 512 -b 96 -ub 32 --device cuda -ngl 2
check_decode decode-mamba2 mamba2 -c 512 -b 64 -ub 64
check_decode decode-granitehybrid granitehybrid-w -c 1024 -b 128 -ub 64 --device metal -ngl 2

# drawn: a fixed-seed walk through the options, N_PER_ARCH per architecture
ctxs=(256 777 4096 32768 262144)
nps=(1 1 2 3 4)
caches=("f16 f16" "f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q4_0 q4_1" "q5_1 iq4_nl" "f16 q8_0")
fas=(auto on off)
ubs=("" "" "-ub 32" "-ub 128" "-ub 512 -b 256")
flags=("" "" "--swa-full" "--kv-unified" "-nkvo")
devices=("" "" "--device metal -ngl 0" "--device metal -ngl 1" "--device metal -ngl 2" "--device metal -ngl all"
         "--device cuda -ngl 1" "--device cuda -ngl all")
seed=4242
# pick N: R = the next draw in [0, N) (no subshell: the seed must advance)
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for a in "${ARCHS[@]}"; do
  for ((i = 0; i < N_PER_ARCH; i++)); do
    pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
    fx=$a
    if [ $((i % 2)) -eq 1 ] || [ "${ctk:0:1}" = q ] || [ "${ctv:0:1}" = q ] || [ "${ctk:0:1}" = i ]; then fx=$a-w; fi
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    pick ${#nps[@]}; np=${nps[$R]}
    pick ${#fas[@]}; fa=${fas[$R]}
    pick ${#ubs[@]}; ub=${ubs[$R]}
    pick ${#flags[@]}; fl=${flags[$R]}
    pick ${#devices[@]}; dev=${devices[$R]}
    # a 256K context over several streams of the wider fixtures is a few GiB of cache in the oracle
    [ "$ctx" = 262144 ] && [ "$fx" != "$a" ] && ctx=32768
    # shellcheck disable=SC2086,SC2046 # the optional groups split into words
    check "$a-$i" "$fx" -c "$ctx" -np "$np" -ctk "$ctk" -ctv "$ctv" -fa "$fa" $ub $fl $dev $(pooled "$a")
  done
done

# ---------------------------------------------------------------- report --
echo "compute upper bounds, bound / llama.cpp, per architecture:"
ratios_by_arch
report archs
