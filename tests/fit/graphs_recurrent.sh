#!/usr/bin/env bash
# The exact compute graphs of the recurrent and hybrid architectures and of
# their MTP draft contexts (src/fit_arch_qwen35.c and its kin over
# src/fit_block_rs.c) against the real llama.cpp v0.5.0 (the oracle): every
# compute buffer equal to the byte, with KV, recurrent-state and output
# buffers and llama.cpp's refusals and aborts alike.  The comparison is
# lib.sh's (archs.sh's).
#
# usage: tests/fit/graphs_recurrent.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_FIXTURE [ARCH_REGEX]]
#
# Fixtures per architecture: as the maker makes it (n_embd 64, heads of 16)
# and wider (n_embd 256, heads of 64, 4 layers: quantized caches need
# heads of whole blocks), and variants where the architecture has one
# (qwen35moe with 8 experts of which 3 used, qwen3next with more value than
# key heads), with quantized weights or a tied output.  Cases: a named list (each rule once), then N_PER_FIXTURE
# (default 4) drawn per fixture with a fixed seed over -c 256 .. 256K (and
# values not multiples of 256) x -np 1..4 x the nine cache types x flash
# attention x -ub / -b x --swa-full / --kv-unified / -nkvo / op offload off
# / --mtp (the MTP draft context beside the main one) x CPU, fake Metal
# at -ngl 0, 1, 2, all and fake CUDA at -ngl 1, all.
# ARCH_REGEX keeps the fixtures whose name matches (a quick run on one
# architecture).  Exit status 1 on any difference.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: graphs_recurrent.sh GGUFMAP FIXTURE ORACLE WORKDIR [N_PER_FIXTURE [ARCH_REGEX]]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 N_PER=${5:-4} ONLY=${6:-.}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# ---------------------------------------------------------------- fixtures --
WIDE="--n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 4"
declare -A FIX=(
  [qwen35]="--arch qwen35"
  [qwen35-w]="--arch qwen35 $WIDE"
  [qwen35moe]="--arch qwen35moe"
  [qwen35moe-w]="--arch qwen35moe $WIDE --n-expert 8 --n-expert-used 3"
  [qwen3next]="--arch qwen3next"
  [qwen3next-w]="--arch qwen3next $WIDE"
  [mamba2]="--arch mamba2"
  [mamba2-w]="--arch mamba2 $WIDE"
  [nemotron_h]="--arch nemotron_h --layers 3"
  [nemotron_h-w]="--arch nemotron_h $WIDE"
  [falcon-h1]="--arch falcon-h1"
  [falcon-h1-w]="--arch falcon-h1 $WIDE"
  [nemotron_h_moe]="--arch nemotron_h_moe --layers 3"
  [nemotron_h_moe-w]="--arch nemotron_h_moe $WIDE --n-expert 8 --n-expert-used 3"
  [granitehybrid]="--arch granitehybrid"
  [granitehybrid-w]="--arch granitehybrid $WIDE"
  [lfm2]="--arch lfm2"
  [lfm2-w]="--arch lfm2 $WIDE"
  [rwkv7]="--arch rwkv7"
  [rwkv7-w]="--arch rwkv7 $WIDE"
  [qwen35moe-q4]="--arch qwen35moe $WIDE --type q4_0 --tied"
  [mamba2-tied]="--arch mamba2 --tied --layers 3"
  [rwkv7-q8]="--arch rwkv7 $WIDE --type q8_0"
  [nemotron_h-q4]="--arch nemotron_h $WIDE --type q4_0 --tied"
  [qwen35-nextn2]="--arch qwen35 --nextn 2"
  [qwen3next-nextn2]="--arch qwen3next --nextn 2"
  [glm4moe-nextn2]="--arch glm4moe --nextn 2"
  [hy_v3-nextn2]="--arch hy_v3 --nextn 2"
)
FIXTURES=()
for f in $(printf '%s\n' "${!FIX[@]}" | sort); do
  [[ $f =~ $ONLY ]] || continue
  FIXTURES+=("$f")
  # shellcheck disable=SC2086 # word splitting of the stored arguments is intended
  "$FIXTURE" ${FIX[$f]} -o "$WORK/$f.gguf" >/dev/null || { echo "FAIL: fixture $f: $FIXTURE ${FIX[$f]}" >&2; exit 1; }
done
[ "${#FIXTURES[@]}" -gt 0 ] || { echo "FAIL: no fixture matches '$ONLY'" >&2; exit 1; }

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

# named NAME FIXTURE ARGS...: a named case, when its fixture is in the run
named() {
  local f=$2
  [[ $f =~ $ONLY ]] || return 0
  check "$@"
}

# ------------------------------------------------------------- the cases --
named qwen35-cpu qwen35 -c 4096
named qwen35-metal-all qwen35-w -c 32768 -np 2 --device metal -ngl all
named qwen35-cuda-partial qwen35-w -c 8192 -np 3 -fa off --device cuda -ngl 2
named qwen35-nkvo qwen35-w -c 4096 -nkvo --device metal -ngl 3
named qwen35moe-cpu qwen35moe -c 4096 -np 2
named qwen35moe-q8 qwen35moe-w -c 65536 -ctk q8_0 -ctv q8_0 -fa on --device metal -ngl all
named qwen35moe-cuda-1 qwen35moe-w -c 16384 --device cuda -ngl 1
named qwen35moe-ub qwen35moe-w -c 4000 -np 4 -ub 64 -b 128 --device metal -ngl 2
named qwen3next-cpu qwen3next -c 8192 -np 3 -fa off
named qwen3next-metal qwen3next-w -c 32768 --device metal -ngl all
named qwen3next-cuda qwen3next-w -c 16384 -np 2 -nkvo --device cuda -ngl 2
named mamba2-state mamba2-w -c 4096 -np 4 --device metal -ngl all
named mamba2-cuda-1 mamba2 -c 2048 -np 2 --device cuda -ngl 1
named nemotron_h-fa-moves nemotron_h-w -c 4096 --device metal -ngl 2
named nemotron_h-nkvo nemotron_h-w -c 4096 -nkvo --device cuda -ngl 3
named nemotron_h_moe-cpu nemotron_h_moe -c 4096 -np 2
named nemotron_h_moe-metal nemotron_h_moe-w -c 16384 --device metal -ngl all
named nemotron_h_moe-mtp nemotron_h_moe-w -c 8192 -np 2 --device cuda -ngl 2 --mtp
named nemotron_h_moe-mtp-metal nemotron_h_moe -c 4096 --device metal -ngl all --mtp
named falcon-h1-nkvo-fa-off falcon-h1 -c 4096 -nkvo --device metal -ngl 2
named falcon-h1-nkvo-output-only falcon-h1 -c 4096 -nkvo --device metal -ngl 1
named falcon-h1-q8 falcon-h1-w -c 16384 -ctk q8_0 -ctv q8_0 --device cuda -ngl all
named granitehybrid-fa-moves granitehybrid-w -c 4096 --device metal -ngl 2
named granitehybrid-fa-stays granitehybrid-w -c 4096 --device metal -ngl 3
named granitehybrid-nkvo-fa-moves granitehybrid-w -c 4096 -nkvo --device metal -ngl 3
named lfm2-fa-moves lfm2-w -c 4096 --device cuda -ngl 2
named lfm2-embd lfm2 -c 2048 --embedding --device metal -ngl all
named rwkv7-state rwkv7 -c 4096 -np 3 -nkvo --device cuda -ngl all
named rwkv7-partial rwkv7-w -c 8192 -np 2 --device metal -ngl 2
# the main context of an MTP run (--mtp: the model loaded with its MTP
# layers; the trunk graph does not run them)
named qwen35-mtp qwen35 -c 8192 -np 2 --device metal -ngl all --mtp
named qwen35moe-mtp qwen35moe-w -c 4096 --device cuda -ngl 2 --mtp
named qwen3next-mtp qwen3next-w -c 16384 -fa off --mtp
named qwen35-mtp-cuda qwen35-w -c 32768 -np 3 --device cuda -ngl 1 --mtp
named qwen35moe-mtp-metal qwen35moe-w -c 8192 -np 2 -ub 128 --device metal -ngl all --mtp
named qwen35moe-mtp-nkvo qwen35moe -c 4096 -nkvo --device metal -ngl 2 --mtp
named qwen3next-mtp-q8 qwen3next-w -c 8192 -ctk q8_0 -ctv q8_0 --device cuda -ngl all --mtp
named qwen3next-mtp-unified qwen3next -c 4096 -np 4 --kv-unified --mtp
# --mtp on the Mamba-2 and short-conv hybrids (no MTP layers: the draft is
# refused) still gives the target its rollback rows
named nemotron_h-rollback nemotron_h-w -c 8192 -np 2 --device metal -ngl 2 --mtp
named lfm2-rollback lfm2-w -c 4096 -np 3 --device cuda -ngl all --mtp
named granitehybrid-no-rollback granitehybrid -c 4096 --mtp
# two MTP blocks: the draft graphs that assert a single one abort (qwen35.cpp:489,
# glm4-moe.cpp:135), hy_v3's takes them
named qwen35-nextn2-abort qwen35-nextn2 -c 4096 --mtp
named qwen3next-nextn2-abort qwen3next-nextn2 -c 4096 -np 2 --device metal -ngl all --mtp
named glm4moe-nextn2-abort glm4moe-nextn2 -c 4096 --mtp
named hy_v3-nextn2 hy_v3-nextn2 -c 4096 --mtp

# drawn: a fixed-seed walk through the options, N_PER per fixture
ctxs=(256 777 4096 5000 32768 262144)
nps=(1 1 2 3 4)
caches=("f16 f16" "f16 f16" "f32 f32" "bf16 bf16" "q8_0 q8_0" "q4_0 q4_1" "q5_0 q5_1" "iq4_nl iq4_nl" "f16 q8_0")
fas=(auto on off)
ubs=("" "" "-ub 32" "-ub 128" "-ub 512 -b 256" "-ub 96 -b 200")
flags=("" "" "--swa-full" "--kv-unified" "-nkvo" "--no-op-offload" "--mtp")
devices=("" "--device metal -ngl 0" "--device metal -ngl 1" "--device metal -ngl 2" "--device metal -ngl all"
         "--device cuda -ngl 1" "--device cuda -ngl all")
seed=1717
# pick N: R = the next draw in [0, N) (no subshell: the seed must advance)
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
for fx in "${FIXTURES[@]}"; do
  case $fx in *-nextn2) continue ;; esac
  for ((i = 0; i < N_PER; i++)); do
    pick ${#caches[@]}; read -r ctk ctv <<<"${caches[$R]}"
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    pick ${#nps[@]}; np=${nps[$R]}
    pick ${#fas[@]}; fa=${fas[$R]}
    pick ${#ubs[@]}; ub=${ubs[$R]}
    pick ${#flags[@]}; fl=${flags[$R]}
    pick ${#devices[@]}; dev=${devices[$R]}
    # quantized caches need heads of whole blocks: the wide fixtures
    case $fx in *-w) ;; *) case $ctk$ctv in *q*|*iq*) ctk=f16 ctv=f16 ;; esac ;; esac
    # a 256K context over several streams of the wider fixtures is a few GiB of cache in the oracle
    case $fx in *-w) [ "$ctx" = 262144 ] && ctx=32768 ;; esac
    # shellcheck disable=SC2086 # the optional groups split into words
    check "$fx-$i" "$fx" -c "$ctx" -np "$np" -ctk "$ctk" -ctv "$ctv" -fa "$fa" $ub $fl $dev
  done
done

# ---------------------------------------------------------------- report --
report graphs_recurrent
