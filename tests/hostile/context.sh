#!/usr/bin/env bash
# context.sh GGUFMAP FIXTURE ORACLE WORKDIR - the contexts llama.cpp v0.5.0
# aborts on while it creates them, for fit's options (issue 19): more
# sequences than outputs (n_seq_max > n_outputs_max = the effective
# n_batch: -b 2 -np 3; -c 1 -np 2, where n_batch is capped by n_ctx), and
# their neighbours that llama.cpp accepts (-np equal to the batch, a
# non-causal model whose batch n_ctx does not cap).  Each configuration is
# tests/fit/lib.sh's check against the real llama.cpp: the same abort (fit
# exit 3, "aborts"), or the same buffers.  Exit status 1 on any difference.
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: context.sh GGUFMAP FIXTURE ORACLE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fit" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

ARCHS=(llama qwen3moe gemma4 qwen4exp qwen2 phi3 deepseek2 qwen35 lfm2 mamba2 gpt-oss t5 bert)
for a in "${ARCHS[@]}"; do
  "$FIXTURE" --arch "$a" -o "$WORK/$a.gguf" >/dev/null || { echo "FAIL: fixture $a" >&2; exit 1; }
done
pooled() { case $1 in bert) echo --embedding ;; esac; }

for a in "${ARCHS[@]}"; do
  e=$(pooled "$a")
  # shellcheck disable=SC2086
  check "$a -b 2 -np 3" "$a" -c 4096 -np 3 -b 2 $e
  # shellcheck disable=SC2086
  check "$a -c 1 -np 2" "$a" -c 1 -np 2 $e
done
check "llama -b 3 -ub 3 -np 4" llama -c 256 -np 4 -b 3 -ub 3
check "llama -b 2 -np 2 (equal: fine)" llama -c 512 -np 2 -b 2
check "qwen3moe metal -b 2 -np 3" qwen3moe -c 4096 -np 3 -b 2 --device metal -ngl all
check "gemma4 cuda -c 1 -np 2" gemma4 -c 1 -np 2 --device cuda -ngl all
check "bert -c 1 -np 2 -b 8 (not capped)" bert -c 1 -np 2 -b 8 -ub 8 --embedding
report "context"
