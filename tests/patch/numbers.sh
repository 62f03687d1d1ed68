#!/usr/bin/env bash
# Proof 2 of the llama.cpp patch: patched and unpatched llama.cpp compute
# bit-identical logits.
#
#   numbers.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR
#
# ORACLE_DIR holds the unpatched prebuilt oracle (tests/oracle/setup.sh) and
# the patched one (tests/patch/build.sh, which prints its directory).  Both link the same prebuilt ggml (CPU kernels
# included), so only the loader differs.  For a fixture of every
# architecture ggufmap models, under each load below, the unpatched oracle
# and the patched one under every planner (the default tight, span,
# coalesce, runs) decode the same 16 tokens (`--decode 16`) and must print the
# same hash of the last token's logits, finite.
#
# Two checks keep this from passing vacuously:
#   - the patched build must map more buffers than the unpatched one in some
#     load of each fixture (a tensor of another buffer inside a span);
#   - every tensor counts: a copy of the fixture with any one tensor's bytes
#     overwritten decodes (unpatched) to another hash, so a tensor that the
#     patched loader served from the wrong bytes would change the hash.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
proof_args 4 "$@"
command -v node >/dev/null || { echo "numbers: node not found (scripts/deps.sh installs nodejs)"; echo "0 passed, 1 failed"; exit 1; }
rm -rf "${work:?}"/*

# ---------------------------------------------------------------- the cases
# fixtures: KEY, the loads to run and the maker's arguments.  q4_0 weights
# in a shuffled order put CPU_REPACK tensors inside the CPU_Mapped span, and
# ffn tensors of several pages let the tight planner split it.
gpu_loads="metal-ngl1 metal-all metal-ot metal-no-mmap cuda-ngl2"
fixtures=(
  "llama|mmap no-mmap ot-moves $gpu_loads|--arch llama --type q4_0 --layers 3 --n-ff 1024 --order shuffle:5"
  "qwen3moe|mmap no-mmap ot-moves $gpu_loads|--arch qwen3moe --type q4_0 --layers 3 --n-ff-exp 1024 --order shuffle:7"
  "gemma4|mmap no-mmap ot-moves lazy lazy-no-mmap $gpu_loads|--arch gemma4 --type q4_0 --head-dim 16 --layers 3 --n-ff 1024 --order shuffle:9"
  "qwen4exp|mmap no-mmap $gpu_loads|--arch qwen4exp --type q4_0 --layers 4 --order shuffle:11"
)
# loads: the oracle's arguments
declare -A loads=(
  [mmap]=""
  [no-mmap]="--no-mmap"
  [ot-moves]="--no-repack --ot blk\\.[02]\\.ffn_(up|gate)(_exps)?\\.=CPU_REPACK"
  [lazy]="--lazy-mode on"
  [lazy-no-mmap]="--lazy-mode on --no-mmap"
  [metal-ngl1]="--fake-gpu metal --ngl 1"
  [metal-all]="--fake-gpu metal --ngl -1"
  [metal-ot]="--fake-gpu metal --ngl -1 --ot blk\\.1\\.ffn=CPU,token_embd=MTL0"
  [metal-no-mmap]="--fake-gpu metal --ngl 2 --no-mmap"
  [cuda-ngl2]="--fake-gpu cuda --ngl 2"
)
planners=(default span coalesce runs)
# tokens per decode: more than the qwen4exp fixture's indexer top_k (8), so
# its choice matters
ntok=16

# decode NAME PLANNER ORACLE ARGS...: a decode into $work/NAME.out; sets
# hash (empty unless finite logits) and nmapped (its MAPPED buffers)
decode() {
  local name=$1
  oracle_run "$work/$name" "${@:2}"
  hash=$(sed -n 's/^DECODE ok kind=[a-z]* n_tokens=[0-9]* n_out=[0-9]* hash=\([0-9a-f]*\) finite=1$/\1/p' "$work/$name.out")
  nmapped=$(grep -c '^MAPPED ' "$work/$name.lines")
}

passed=0 failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# Tensors llama.cpp loads that a short decode never reads, by fixture (a
# regex of names): they cannot move the hash, so overwriting them proves
# nothing.  gemma4: layer 2 is a shared-KV layer (gemma4.cpp:10, has_kv at
# :73 and :233): it attends with layer 1's cache, so its K and V
# projections are loaded and never used.  (qwen4exp's indexer picks the
# top_k = 8 keys of each token: decodes of 16 tokens make it choose.)
declare -A unread=(
  [gemma4]='^blk\.2\.attn_(k|v|k_norm)\.weight$'
)

# sensitive KEY MODEL HASH: every tensor overwritten in turn changes the hash
sensitive() {
  local key=$1 model=$2 clean=$3 name shard offset size copy same=""
  local n=0
  while read -r name shard offset size; do
    [[ -n ${unread[$key]:-} && $name =~ ${unread[$key]} ]] && continue
    copy=$work/$key.corrupt.gguf
    cp "$model" "$copy"
    head -c "$size" /dev/zero | tr '\0' '\377' |
      dd of="$copy" bs=65536 seek="$offset" oflag=seek_bytes conv=notrunc status=none
    decode "$key.corrupt" default "$oracle" --decode "$ntok" "$copy"
    [[ $hash == "$clean" ]] && same+=" $name"
    n=$((n + 1))
  done < <("$ggufmap" inspect "$model" --json | node -e '
    const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const t of j.tensors) if (t.size > 0) console.log(t.name, t.shard, t.offset, t.size)')
  rm -f "$work/$key.corrupt.gguf"
  if (( n == 0 )); then
    fail "$key: no tensors listed by $(q "$ggufmap" inspect "$model" --json)"
  elif [[ -n $same ]]; then
    fail "$key: overwriting these tensors leaves the logits hash $clean unchanged:$same"
  else
    echo "ok   $key: each of its $n tensors, overwritten, changes the logits hash"
    passed=$((passed + 1))
  fi
}

for f in "${fixtures[@]}"; do
  IFS='|' read -r key fixture_loads fixture_args <<<"$f"
  read -r -a fargs <<<"$fixture_args"
  model=$work/$key.gguf
  if ! "$fixture" "${fargs[@]}" -o "$model" >"$work/$key.maker.log" 2>&1; then
    fail "$key: the fixture maker failed: $(q "$fixture" "${fargs[@]}" -o "$model")"; continue
  fi
  more=""
  for load in $fixture_loads; do
    read -r -a oargs <<<"${loads[$load]}"
    case=$key.$load
    decode "$case.unpatched" default "$oracle" "${oargs[@]}" --decode "$ntok" "$model"
    want=$hash base=$nmapped
    if [[ -z $want ]]; then
      fail "$case: the unpatched llama.cpp decoded no finite logits: $(q "$oracle" "${oargs[@]}" --decode "$ntok" "$model") ($(grep -E '^(DECODE|RESULT|ERR|ABORT)' "$work/$case.unpatched.out" | head -3 | tr '\n' ' '))"
      continue
    fi
    [[ $load == mmap ]] && sensitive "$key" "$model" "$want"
    bad="" counts=""
    for p in "${planners[@]}"; do
      decode "$case.$p" "$p" "$patched" "${oargs[@]}" --decode "$ntok" "$model"
      counts+=" $p:$nmapped"
      [[ $hash == "$want" ]] || bad+=" $p:${hash:-none}"
      if [[ $p == default ]] && (( nmapped > base )); then more+=" $load"; fi
    done
    if [[ -n $bad ]]; then
      fail "$case: logits hash $want unpatched, patched$bad: LLAMA_ARG_MMAP_PLANNER=P $(q "$patched" "${oargs[@]}" --decode "$ntok" "$model")"
    else
      echo "ok   $case: hash $want from every build; mapped buffers unpatched $base, patched$counts"
      passed=$((passed + 1))
    fi
  done
  [[ -n $more ]] || fail "$key: the patched build never mapped more buffers than the unpatched one: nothing was tested"
done
echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
