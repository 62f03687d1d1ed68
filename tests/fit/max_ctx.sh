#!/usr/bin/env bash
# `ggufmap fit --max-ctx` against the real llama.cpp v0.5.0 (issue 19), one
# architecture per family, all layers on the oracle's fake Metal device: fit's
# answer R under a limit, then llama.cpp run at -c R and at -c R + 256 (a full
# batch of 2048 tokens decoded, every output kept: what fit's verdict counts;
# tests/fit/real_total.js sums the weights and the context's buffers on MTL0).
# At R llama.cpp must hold at most the limit, at R + 256 more.
#   dense           llama
#   SWA             gemma3 (sliding-window layers beside full ones)
#   MoE             qwen3moe
#   MLA             deepseek2
#   hybrid          qwen35 (gated delta net + attention), granitehybrid (Mamba-2)
#   encoder-decoder t5 (self and cross attention caches)
# Pure recurrent models (mamba2, rwkv7) and encoders without a cache (bert)
# hold the same bytes at every -c: fit answers the -c searched from, and there
# is no next step that fails (checked too: llama.cpp holds the same at R and R + 256).
#
# usage: tests/fit/max_ctx.sh GGUFMAP FIXTURE ORACLE WORKDIR
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: max_ctx.sh GGUFMAP FIXTURE ORACLE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

n_ok=0 n_fail=0
fail() { echo "FAIL: $*"; n_fail=$((n_fail + 1)); }
wide=(--n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3)
for a in llama gemma3 qwen3moe deepseek2 qwen35 granitehybrid t5 mamba2 bert; do
  "$FIXTURE" --arch "$a" "${wide[@]}" -o "$WORK/$a.gguf" >/dev/null || { echo "FAIL: fixture $a" >&2; exit 1; }
done

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"   # to_oracle

# mtl0 ARGS...: llama.cpp's bytes on MTL0 after a full batch of $n_batch tokens
# (empty when the decode failed)
mtl0() {
  "$ORACLE" --no-repack --fake-gpu metal --ngl all --b 2048 --ub 512 --decode "$n_batch" --logits-all "$@" \
    >"$WORK/oracle.out" 2>&1
  node "$HERE/real_total.js" "$WORK/oracle.out" MTL0 2>/dev/null |
    node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).MTL0)' 2>/dev/null
}

# family NAME ARCH LIMIT_MIB [flat] [FIT_ARGS...]: R = fit's --max-ctx under
# LIMIT on MTL0 (searched from -c 65536; FIT_ARGS go to the oracle too, in
# its spelling); llama.cpp at R holds at most LIMIT, at R + 256 more (flat:
# the same as at R, and R is the -c searched from)
family() {
  local name=$1 a=$2 mib=$3 limit=$(($3 * 1048576)) flat=false r at_r at_r1 extra=() i j
  shift 3
  [ "${1:-}" = flat ] && { flat=true; shift; }
  [ $# -gt 0 ] && mapfile -t extra < <(to_oracle "$@")
  n_batch=2048
  for ((i = 1; i < $#; i++)); do [ "${!i}" = -b ] && { j=$((i + 1)); n_batch=${!j}; }; done
  r=$("$GGUFMAP" fit "$WORK/$a.gguf" --device metal -ngl all -c 65536 --limit "${limit}B" --max-ctx "$@" \
        --page 1B -nr --json 2>"$WORK/fit.err" |
      node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).max_ctx)')
  if ! [[ $r =~ ^[0-9]+$ ]] || [ "$r" -eq 0 ]; then
    fail "$name: --max-ctx gave '$r': $(head -c 200 "$WORK/fit.err")"; return
  fi
  at_r=$(mtl0 "${extra[@]}" --ctx "$r" "$WORK/$a.gguf")
  at_r1=$(mtl0 "${extra[@]}" --ctx "$((r + 256))" "$WORK/$a.gguf")
  if [[ ! $at_r =~ ^[0-9]+$ ]] || [[ ! $at_r1 =~ ^[0-9]+$ ]]; then
    fail "$name: llama.cpp did not decode at -c $r or $((r + 256)) ('$at_r', '$at_r1')"
  elif $flat && [ "$r" -eq 65536 ] && [ "$at_r" -le "$limit" ] && [ "$at_r1" -eq "$at_r" ]; then
    echo "ok: $name: --max-ctx $r (the -c searched from) at $mib MiB: llama.cpp holds $at_r B at every -c"
    n_ok=$((n_ok + 1))
  elif ! $flat && [ "$at_r" -le "$limit" ] && [ "$at_r1" -gt "$limit" ]; then
    echo "ok: $name: --max-ctx $r at $mib MiB: llama.cpp holds $at_r B at -c $r, $at_r1 B at -c $((r + 256))"
    n_ok=$((n_ok + 1))
  else
    fail "$name: --max-ctx $r at $limit B: llama.cpp holds $at_r B at -c $r, $at_r1 B at -c $((r + 256))"
  fi
}
family dense llama 32
family swa gemma3 32
family moe qwen3moe 32
family mla deepseek2 32
family hybrid-gdn qwen35 32
family hybrid-mamba2 granitehybrid 32
family encoder-decoder t5 128 -b 1024 -ub 1024   # an encoder takes the whole batch in one ubatch
family recurrent mamba2 32 flat
family encoder bert 32 flat --embedding -b 256 -ub 256   # positions up to the trained 256

echo "max_ctx: $n_ok of $((n_ok + n_fail)) families as llama.cpp"
[ "$n_fail" -eq 0 ]
