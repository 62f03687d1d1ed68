#!/usr/bin/env bash
# refuse.sh GGUFMAP FIXTURE ORACLE WORK - what llama.cpp refuses to load,
# `ggufmap plan` refuses with exit status 2 and a message naming the cause:
#   - an architecture llama.cpp v0.5.0 has no loader for (a llama fixture
#     whose "llama" is renamed "llamb" throughout, keys included);
#   - a required tensor missing (blk.1.attn_norm renamed attn_nore: also a
#     tensor the loader does not use, but the missing one stops it first);
#   - a tensor the loader does not use (glm4moe's MTP block moved from blk.2
#     to blk.3, past block_count 3).
# Each case also runs the oracle, which must fail to load the file; the
# messages are llama.cpp's (check_tensor_dims, done_getting_tensors).
set -uo pipefail
export LC_ALL=C
ggufmap=$1 fixture=$2 oracle=$3 work=$4
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
pass=0 fail=0
expect_refusal() { # NAME MODEL NEEDLE
  local name=$1 model=$2 needle=$3 out rc ores
  out=$("$ggufmap" plan "$model" --format buffers 2>&1); rc=$?
  ores=$("$oracle" "$model" 2>/dev/null | tail -n 1)
  if (( rc == 2 )) && [[ $out == *"$needle"* ]] && [[ $ores == "RESULT fail" ]]; then
    echo "ok   $name: plan exit 2 ($out); oracle: $ores"
    pass=$((pass + 1))
  else
    echo "FAIL $name: plan exit $rc, output: $out; oracle: $ores (expected exit 2 naming '$needle' and RESULT fail)"
    fail=$((fail + 1))
  fi
}
"$fixture" --arch llama --layers 2 -o "$work/llama.gguf" >/dev/null || { echo "fixture failed"; echo "0 passed, 1 failed"; exit 1; }
sed 's/llama/llamb/g' "$work/llama.gguf" >"$work/llamb.gguf"
expect_refusal "unknown architecture" "$work/llamb.gguf" "architecture 'llamb'"
sed 's/blk\.1\.attn_norm/blk.1.attn_nore/' "$work/llama.gguf" >"$work/missing.gguf"
expect_refusal "missing tensor" "$work/missing.gguf" "check_tensor_dims: tensor 'blk.1.attn_norm.weight' not found"
"$fixture" --arch glm4moe --layers 2 --nextn 1 -o "$work/glm.gguf" >/dev/null || { echo "fixture failed"; echo "0 passed, 1 failed"; exit 1; }
sed 's/blk\.2\./blk.3./g' "$work/glm.gguf" >"$work/glm-beyond.gguf"
expect_refusal "unused tensor" "$work/glm-beyond.gguf" "tensor 'blk.3.attn_norm.weight' is not used"
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
