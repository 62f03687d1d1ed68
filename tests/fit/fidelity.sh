#!/usr/bin/env bash
# Fidelity of `ggufmap fit` against the real llama.cpp v0.5.0 (the oracle).
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
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1

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

# ------------------------------------------------------------ comparison --
n_cases=0 n_fail=0 n_refused=0
declare -A N_KIND=()
fails=()

# to_oracle ARGS...: fit's context and placement flags in the oracle's spelling
to_oracle() {
  local out=()
  while [ $# -gt 0 ]; do
    case $1 in
      -c) out+=(--ctx "$2"); shift ;;
      -np) out+=(--np "$2"); shift ;;
      -ctk) out+=(--ctk "$2"); shift ;;
      -ctv) out+=(--ctv "$2"); shift ;;
      -fa) out+=(--fa "$2"); shift ;;
      -ub) out+=(--ub "$2"); shift ;;
      -b) out+=(--b "$2"); shift ;;
      --swa-full|--kv-unified) out+=("$1") ;;
      -nkvo) out+=(--nkvo) ;;
      --embedding) out+=(--embd) ;;
      --device) out+=(--fake-gpu "$2"); shift ;;
      -ngl) out+=(--ngl "$2"); shift ;;
      *) echo "fidelity.sh: no oracle spelling for '$1'" >&2; exit 2 ;;
    esac
    shift
  done
  printf '%s\n' "${out[@]}"
}

# oracle_lines OUT: the oracle's context lines in fit_lines.js's format
oracle_lines() {
  awk '
    $1 == "RESULT" && $2 == "abort" { abort = 1 }
    $1 == "CTX" && $2 == "fail" { fail = 1 }
    $1 == "CTX" && $2 == "ok" { ok = $0 }
    $1 == "CTXBUF" && $2 != "kind=compute" { buf[++nb] = $1 " " $2 " " $3 " " $4 }
    $1 == "CTXTOTAL" && $2 == "kind=compute" { comp[++nc] = "CTXBUF " $2 " " $3 " " $4 }
    END {
      if (abort) { print "CTX abort"; exit }
      if (fail) { print "CTX fail"; exit }
      print ok
      for (i = 1; i <= nb; i++) print buf[i]
      for (i = 1; i <= nc; i++) print comp[i]
    }' "$1"
}

# check NAME FIXTURE ARGS...: one configuration
check() {
  local name=$1 fx=$2
  shift 2
  local model="$WORK/$fx.gguf" dir="$WORK/case-$n_cases" oargs
  mkdir -p "$dir"
  mapfile -t oargs < <(to_oracle "$@")
  n_cases=$((n_cases + 1))
  "$GGUFMAP" fit "$model" "$@" -nr --page 1B --json >"$dir/fit.json" 2>"$dir/fit.err"
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    fails+=("$name: ggufmap fit exited $rc: $(head -c 300 "$dir/fit.err")"); n_fail=$((n_fail + 1)); return
  fi
  if ! node "$HERE/fit_lines.js" "$dir/fit.json" >"$dir/fit.lines" 2>"$dir/fit_lines.err"; then
    fails+=("$name: inconsistent JSON: $(head -c 300 "$dir/fit_lines.err")"); n_fail=$((n_fail + 1)); return
  fi
  "$ORACLE" --no-repack "${oargs[@]}" "$model" >"$dir/oracle.out" 2>&1
  oracle_lines "$dir/oracle.out" >"$dir/oracle.lines"
  # exact lines as they are; an upper bound stands in for the oracle's value when not below it
  grep -v '^OUTMAX' "$dir/fit.lines" | awk -v O="$dir/oracle.lines" '
    BEGIN { while ((getline l < O) > 0) o[++n] = l }
    { f[++m] = $0 }
    END {
      if (m != n) bad = 1
      for (i = 1; i <= m && i <= n; i++) {
        if (f[i] ~ /^BOUND/) {
          split(f[i], a, " "); split(o[i], b, " ")
          sub(/^size=/, "", a[4]); sub(/^size=/, "", b[4])
          if (a[2] != b[2] || a[3] != b[3] || a[4] + 0 < b[4] + 0) bad = 1
        } else if (f[i] != o[i]) bad = 1
      }
      exit bad
    }' /dev/stdin || {
    fails+=("$name ($fx $*): fit and llama.cpp differ:
$(diff "$dir/fit.lines" "$dir/oracle.lines" | grep -v OUTMAX | head -8)"); n_fail=$((n_fail + 1)); return
  }
  if grep -q '^CTX \(fail\|abort\)' "$dir/oracle.lines"; then n_refused=$((n_refused + 1)); fi
  local k
  for k in $(awk '$1 == "CTXBUF" || $1 == "BOUND" { sub(/^kind=/, "", $2); print $2 }' "$dir/fit.lines"); do
    N_KIND[$k]=$(( ${N_KIND[$k]:-0} + 1 ))
  done
  rm -rf "$dir"
}

# check_decode NAME FIXTURE ARGS...: decode n_batch tokens with every
# output; the output buffer ends at fit's bytes_max, nothing else changes
check_decode() {
  local name=$1 fx=$2
  shift 2
  local model="$WORK/$fx.gguf" dir="$WORK/decode-$n_cases" oargs n_batch
  mkdir -p "$dir"
  mapfile -t oargs < <(to_oracle "$@")
  n_cases=$((n_cases + 1))
  "$GGUFMAP" fit "$model" "$@" -nr --page 1B --json >"$dir/fit.json" 2>/dev/null
  node "$HERE/fit_lines.js" "$dir/fit.json" >"$dir/fit.lines" || { fails+=("$name: bad JSON"); n_fail=$((n_fail + 1)); return; }
  n_batch=$(sed -n 's/^CTX ok .* n_batch=\([0-9]*\) .*/\1/p' "$dir/fit.lines")
  "$ORACLE" --no-repack "${oargs[@]}" --decode "$n_batch" --logits-all "$model" >"$dir/oracle.out" 2>&1
  local want got before after
  want=$(awk '$1 == "OUTMAX" { print $2, $3 }' "$dir/fit.lines")
  got=$(awk '$1 == "DECTOTAL" && $2 == "kind=output" { print $3, $4 }' "$dir/oracle.out")
  before=$(awk '$1 == "CTXTOTAL" && $2 != "kind=output"' "$dir/oracle.out" | sed 's/^CTXTOTAL //')
  after=$(awk '$1 == "DECTOTAL" && $2 != "kind=output"' "$dir/oracle.out" | sed 's/^DECTOTAL //')
  if ! grep -q '^DECODE ok' "$dir/oracle.out" || [ "$want" != "$got" ] || [ "$before" != "$after" ]; then
    fails+=("$name ($fx $*): decode of $n_batch tokens: output fit '$want', llama.cpp '$got'; other buffers before/after differ: $([ "$before" != "$after" ] && echo yes || echo no)")
    n_fail=$((n_fail + 1)); return
  fi
  N_KIND[output_max]=$(( ${N_KIND[output_max]:-0} + 1 ))
  rm -rf "$dir"
}

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
summary="$n_cases configurations ($n_refused refused or aborted by llama.cpp, identically), buffers equal:"
for k in kv rs output compute output_max; do summary+=" $k ${N_KIND[$k]:-0}"; done
for f in "${fails[@]}"; do printf 'FAIL: %s\n' "$f"; done
if [ "$n_fail" -gt 0 ]; then
  echo "fidelity: $n_fail of $n_cases configurations differ; $summary"
  exit 1
fi
echo "fidelity: ok: $summary"
