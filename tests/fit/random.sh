#!/usr/bin/env bash
# A seeded random walk over the context options of `ggufmap fit` (issue 19),
# against the real llama.cpp v0.5.0 (the oracle, CPU and fake GPUs), on
# every architecture ggufmap-fixture makes (tests/fit/arch_fixtures.sh).
# Each draw picks, independently:
#   -c     0 (the trained context), 1, 100, 256, 777, 1000, 3000, 4096,
#          5000, 32768, 262144 (most not multiples of 256)
#   -np    1..4
#   -ctk / -ctv  each of the nine cache types llama.cpp takes (f32 f16 bf16
#          q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1; f16 the most), the same for both
#          three times in four
#   -fa    auto (half the time), on, off
#   -ub and -b   each on its own (default, 1, 32, 100, 128, 512, 1024 /
#          default, 1, 2, 3, 64, 100, 256, 512, 4096): -b below -ub, and
#          -b below -np (llama.cpp aborts there, fit refuses)
#   --swa-full, -kvu, -nkvo, --no-op-offload, --embedding: each one time in
#          four (--embedding on models without pooling too)
#   the devices: CPU, a fake Metal, a fake CUDA, two fake Metal (MTL0,MTL1),
#          two fake CUDA (CUDA0,CUDA1; CUDA1,CUDA0 with -ts 3,1), each at
#          -ngl 0, 1, 2, 3, all
# The fixture per draw: the maker's, the wider one (quantized caches need
# heads of whole blocks) or, for -c 0 one time in two, the wider one with a
# trained context of 3000 (A-t: not a multiple of 256).  Comparison as
# archs.sh (lib.sh): context sizes, refusals and aborts, KV / state / output
# to the byte, compute exact where fit says exact (every fixture
# architecture's graph) or never below where it says bound (lfm2 and
# granite variants, not drawn here).
#
# usage: tests/fit/random.sh GGUFMAP FIXTURE ORACLE WORKDIR [SEED [N_PER_ARCH]]
#   SEED default 19, N_PER_ARCH default 2; docs/fit.md has a larger run.
#   RANDOM_LOG=FILE appends each drawn configuration to FILE (to replay one).
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: random.sh GGUFMAP FIXTURE ORACLE WORKDIR [SEED [N_PER_ARCH]]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 SEED=${5:-19} N_PER_ARCH=${6:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
[[ $SEED =~ ^[0-9]+$ && $N_PER_ARCH =~ ^[0-9]+$ ]] || { echo "random.sh: SEED and N_PER_ARCH are numbers" >&2; exit 2; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

# shellcheck source=tests/fit/arch_fixtures.sh
. "$HERE/arch_fixtures.sh"
make_arch_fixtures
for a in "${ARCHS[@]}"; do
  pos=()   # learned positions: one row per trained position
  case $a in bert) pos=(--shape "position_embd.weight=256,3000") ;; esac
  make_fixture "$a-t" --arch "$a" --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3 \
    --set "{arch}.context_length=u32:3000" "${pos[@]}"
done

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

ctxs=(0 0 1 100 256 777 1000 3000 4096 5000 32768 262144)
nps=(1 1 1 2 3 4)
types=(f32 f16 f16 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1)
fas=(auto auto on off)
ubs=("" "" 1 32 100 128 512 1024)
bs=("" "" "" 1 2 3 64 100 256 512 4096)
devices=("" "" "--device metal" "--device metal" "--device cuda" "--device cuda" "--device MTL0,MTL1"
         "--device CUDA0,CUDA1" "--device CUDA1,CUDA0 -ts 3,1")
ngls=(0 1 2 3 all all)   # the fixtures have 2 or 3 layers: 3 of 2 is every layer and the output
seed=$SEED
# pick N: R = the next draw in [0, N) (no subshell: the seed must advance)
pick() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); R=$(( seed / 65536 % $1 )); }
# flag F: F one time in four
flag() { pick 4; [ "$R" -eq 0 ] && args+=("$1"); }
n_drawn=0
for a in "${ARCHS[@]}"; do
  for ((i = 0; i < N_PER_ARCH; i++)); do
    pick ${#types[@]}; ctk=${types[$R]}
    ctv=$ctk; pick 4; [ "$R" -eq 0 ] && { pick ${#types[@]}; ctv=${types[$R]}; }
    pick ${#ctxs[@]}; ctx=${ctxs[$R]}
    fx=$a
    case $ctk$ctv in *q*) fx=$a-w ;; esac   # q8_0 ... iq4_nl
    pick 2; [ "$R" -eq 0 ] && fx=$a-w
    [ "$ctx" = 0 ] && { pick 2; [ "$R" -eq 0 ] && fx=$a-t; }
    # a 256K context over several streams of the wider fixtures is a few GiB of cache in the oracle
    [ "$ctx" = 262144 ] && [ "$fx" != "$a" ] && ctx=32768
    args=(-c "$ctx")
    pick ${#nps[@]}; args+=(-np "${nps[$R]}")
    args+=(-ctk "$ctk" -ctv "$ctv")
    pick ${#fas[@]}; args+=(-fa "${fas[$R]}")
    pick ${#ubs[@]}; [ -n "${ubs[$R]}" ] && args+=(-ub "${ubs[$R]}")
    pick ${#bs[@]}; [ -n "${bs[$R]}" ] && args+=(-b "${bs[$R]}")
    flag --swa-full; flag --kv-unified; flag -nkvo; flag --no-op-offload
    if [ -n "$(pooled "$a")" ]; then args+=(--embedding); else flag --embedding; fi
    pick ${#devices[@]}
    # shellcheck disable=SC2206 # the device group splits into words
    [ -n "${devices[$R]}" ] && { args+=(${devices[$R]}); pick ${#ngls[@]}; args+=(-ngl "${ngls[$R]}"); }
    [ -n "${RANDOM_LOG:-}" ] && echo "$a-$i $fx ${args[*]}" >>"$RANDOM_LOG"
    check "$a-$i" "$fx" "${args[@]}"
    n_drawn=$((n_drawn + 1))
  done
done

echo "seed $SEED, $N_PER_ARCH per architecture: $n_drawn drawn configurations"
ratios_by_arch
report random
