#!/usr/bin/env bash
# The arm64 CPU_REPACK rules (`ggufmap plan --cpu arm64`) against the real
# llama.cpp v0.5.0 for linux-arm64, run under qemu-user with a CPU that has
# dotprod and i8mm and no SVE, as Apple Silicon (tests/oracle/arm64).  Which
# tensors are repacked, and so every buffer's bytes, must match exactly: the
# three original archs over the repackable types, and twelve more from the
# fixture maker (with the MTP head's load where they have one).
#   arm64.sh GGUFMAP FIXTURE_MAKER ARM64_RUNNER WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 runner=$3 work=$4
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
[[ -x $runner ]] || { echo "arm64 oracle runner missing: $runner (run tests/oracle/arm64/setup.sh)"; echo "0 passed, 1 failed"; exit 1; }
passed=0 failed=0 buffers=0
check() { # NAME MODEL ORACLE-FLAGS -- PLAN-FLAGS
  local name=$1 model=$2; shift 2
  local oflags=() pflags=()
  while [[ $1 != -- ]]; do oflags+=("$1"); shift; done; shift
  pflags=("$@")
  local want got
  want=$("$runner" "${oflags[@]}" "$model" 2>&1 | grep -E '^(MAPPED|ALLOC|LOAD|RESULT)' | grep -v '^RESULT ok')
  got=$("$ggufmap" plan --format buffers --cpu arm64 "${pflags[@]}" "$model" 2>&1)
  if [[ $want == "$got" ]]; then
    passed=$((passed + 1)); buffers=$((buffers + $(grep -c . <<<"$got")))
  else
    failed=$((failed + 1)); echo "MISMATCH $name: oracle ${oflags[*]} / plan ${pflags[*]}"; diff <(echo "$want") <(echo "$got") | sed 's/^/    /'
  fi
}
n=0
for arch in llama qwen3moe gemma4; do
  for type in q4_0 q8_0 q4_K q5_K q6_K iq4_nl q2_K; do
    for vocab in 300 302 304; do
      n=$((n + 1))
      # keep the run short: every type once per arch, the vocab sizes on two types
      [[ $vocab != 300 && $type != q4_0 && $type != q6_K ]] && continue
      m="$work/$arch-$type-$vocab.gguf"
      "$fixture" --arch "$arch" --layers 2 --type "$type" --n-embd 256 --n-ff 512 --vocab "$vocab" --seed $n -o "$m" >/dev/null ||
        { failed=$((failed + 1)); echo "fixture failed: $arch $type $vocab"; continue; }
      check "$arch/$type/$vocab cpu" "$m" -- 
      check "$arch/$type/$vocab metal ngl 2" "$m" --fake-gpu metal --ngl 2 -- --device metal -ngl 2
    done
  done
done
# More architectures (tests/plan/archs.sh has them all on x86): their tensors'
# ops and shapes decide CPU_REPACK; with --mtp the MTP head's load too.
for arch in deepseek2 glm4moe qwen35moe gpt-oss phi3 nemotron_h_moe lfm2 gemma3 bert mamba2 rwkv7 gemma3n; do
  for type in q4_0 q4_K; do
    n=$((n + 1))
    m="$work/$arch-$type.gguf"
    "$fixture" --arch "$arch" --layers 4 --type "$type" --n-embd 256 --n-ff 512 --seed $n -o "$m" >/dev/null ||
      { failed=$((failed + 1)); echo "fixture failed: $arch $type"; continue; }
    check "$arch/$type cpu" "$m" --
    check "$arch/$type metal ngl 2" "$m" --fake-gpu metal --ngl 2 -- --device metal -ngl 2
  done
done
for arch in deepseek2 glm4moe qwen35moe nemotron_h_moe; do
  check "$arch/q4_K metal ngl all --mtp" "$work/$arch-q4_K.gguf" --fake-gpu metal --ngl -1 --mtp -- --device metal -ngl all --mtp
done
m="$work/llama-q4_0-300.gguf"
check "no-repack" "$m" --no-repack -- -nr
check "cpu-moe" "$work/qwen3moe-q4_0-300.gguf" --fake-gpu metal --ngl -1 --cpu-moe -- --device metal -ngl all --cpu-moe
echo "arm64 cases: $((passed + failed)), buffers: $buffers matched"
echo "$passed passed, $failed failed"
[[ $failed == 0 && $passed -ge 20 ]]
