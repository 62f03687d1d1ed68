#!/usr/bin/env bash
# Proof 2 of the llama.cpp patch: patched and unpatched llama.cpp compute
# bit-identical logits, on a fixture of every architecture ggufmap models.
#
#   numbers.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR
#
# ORACLE_DIR holds the unpatched prebuilt oracle (tests/oracle/setup.sh) and
# the patched one (tests/patch/build.sh, which prints its directory).  Both
# link the same prebuilt ggml (CPU kernels included), so only the loader
# differs.  For one fixture of each architecture `ggufmap-fixture
# --list-archs` names, under each of its loads below, the unpatched oracle
# and the patched one under every planner (the default tight, span,
# coalesce, runs) decode the same 16 tokens (`--decode 16`, one thread) and
# must print the same hash of the last token's logits (of the pooled output
# for an embedding model), finite.
#
#   llama, qwen3moe, gemma4, qwen4exp   every load: mmap, no mmap, -ot moving
#                                       tensors, lazy tables, the fake Metal
#                                       and CUDA devices (Metal -ngl 1, all,
#                                       all with -ot both ways, no mmap)
#   the other architectures             mmap, no mmap, the fake Metal device at
#                                       -ngl 1, and at -ngl all with -ot
#                                       moving tensors both ways
#
# Two checks keep this from passing vacuously:
#   - the patched build must map more buffers than the unpatched one in some
#     load of each fixture (a tensor of another buffer inside a span);
#   - every tensor counts: a copy of the fixture with any one tensor's bytes
#     overwritten with 0xFF (NaN scales and values) decodes (unpatched) to
#     another hash, so the decode reads every tensor and one whose pages the
#     patched build left unmapped or released would show.  A tensor a short
#     decode never reads is named below (`unread`) with the llama.cpp source
#     line that says why, and must leave the hash unchanged (else the reason
#     is stale).
# Fixtures run on PLAN_JOBS workers (default 2).  Output: "ok"/"FAIL" per
# check, then "P passed, F failed"; exit 1 on any failure.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
proof_args 4 "$@"
rm -rf "${work:?}"/*
mkdir -p "$work/results"

# ---------------------------------------------------------------- the loads
# the oracle's arguments
declare -A loads=(
  [mmap]=""
  [no-mmap]="--no-mmap"
  [ot-moves]="--no-repack --ot blk\\.[02]\\.ffn_(up|gate)(_exps)?\\.=CPU_REPACK"
  [lazy]="--lazy-mode on"
  [lazy-no-mmap]="--lazy-mode on --no-mmap"
  [metal-ngl1]="--fake-gpu metal --ngl 1"
  [metal-all]="--fake-gpu metal --ngl -1"
  [metal-ot]="--fake-gpu metal --ngl -1 --ot blk\\.1\\.=CPU,token_embd=MTL0"
  [metal-no-mmap]="--fake-gpu metal --ngl 2 --no-mmap"
  [cuda-ngl2]="--fake-gpu cuda --ngl 2"
)
planners=(default span coalesce runs)
# tokens per decode: more than the qwen4exp fixture's indexer top_k (8), so
# its choice matters
ntok=16

# --------------------------------------------------------------- the fixtures
# KEY|LOADS|MAKER ARGUMENTS.  The first four: q4_0 weights in a shuffled
# order put CPU_REPACK tensors inside the CPU_Mapped span, and ffn tensors of
# several pages let the tight planner split it.
gpu_loads="metal-ngl1 metal-all metal-ot metal-no-mmap cuda-ngl2"
fixtures=(
  "llama|mmap no-mmap ot-moves $gpu_loads|--arch llama --type q4_0 --layers 3 --n-ff 1024 --order shuffle:5"
  "qwen3moe|mmap no-mmap ot-moves $gpu_loads|--arch qwen3moe --type q4_0 --layers 3 --n-ff-exp 1024 --order shuffle:7"
  "gemma4|mmap no-mmap ot-moves lazy lazy-no-mmap $gpu_loads|--arch gemma4 --type q4_0 --head-dim 16 --layers 3 --n-ff 1024 --order shuffle:9"
  "qwen4exp|mmap no-mmap $gpu_loads|--arch qwen4exp --type q4_0 --layers 4 --order shuffle:11"
)
# Every other architecture: f32 weights and a q4_0 output.weight, shuffled.
# CPU_REPACK takes the output (the mmap load splits CPU_Mapped around it),
# and f32 blocks weigh enough in the logits that each block tensor moves
# the hash (q4_0 blocks, at the maker's 0.001 scale, leave the MoE score
# biases without effect on 2-layer decodes).
declare -A arch_args=(
  [nemotron_h]="--layers 3"      # one layer of each kind (docs/fixture-archs.md)
  [nemotron_h_moe]="--layers 3"
)
first_four=" llama qwen3moe gemma4 qwen4exp "
seed=100
while read -r arch _; do
  [[ $first_four == *" $arch "* ]] && continue
  seed=$((seed + 1))
  fixtures+=("$arch|mmap no-mmap metal-ngl1 metal-ot|--arch $arch --type f32 --output-type q4_0 --n-ff 1024 ${arch_args[$arch]:-} --order shuffle:$seed")
done < <("$fixture" --list-archs | tail -n +2)

# ---------------------------------------------- tensors a decode never reads
# By fixture: unread[KEY] a regex of names, why[KEY] the reason.  Overwriting
# them proves nothing, so they are checked the other way round: the hash
# must not move.
declare -A unread=() why=()
# name_unread KEY REGEX WHY
name_unread() { unread[$1]=$2 why[$1]=$3; }
name_unread gemma4 '^blk\.2\.attn_(k|v|k_norm)\.weight$' \
  "layer 2 is a shared-KV layer (gemma4.cpp:10, has_kv at :73 and :233): it attends with layer 1's cache, so its K and V projections are loaded and never used"
for arch in phi3 phimoe; do
  name_unread $arch '^rope_factors_short\.weight$' \
    'LongRoPE: a context (256) beyond rope.scaling.original_context_length (128) takes rope_factors_long (llama-model.cpp:2267-2268)'
done
name_unread rwkv7 '^blk\.0\.time_mix_v[012]\.weight$' \
  "the first layer's value is the value residual itself; the v0/v1/v2 gate mixes it into later layers only (rwkv7-base.cpp:74-83)"
name_unread t5encoder '^output\.weight$' \
  'loaded (t5encoder.cpp:18) but the encoder graph ends at output_norm_enc (t5.cpp:265-360, graph<true>, models.h:1478): pooled embeddings never reach it'
# mtp_unread ARCH BLOCK SOURCE: the NextN (MTP) block BLOCK of ARCH's fixture
# (its first block past the trunk) is skipped without load_mtp at SOURCE;
# what the arch creates there without the flag is loaded but outside the
# trunk the decode runs.
mtp_unread() {
  name_unread "$1" "^blk\\.$2\\." "blk.$2 is the NextN (MTP) block: created with TENSOR_SKIP unless load_mtp ($3); what is created without the flag lies beyond n_layer() = block_count - nextn_predict_layers (llama-hparams.cpp:347-348), which the decode runs"
}
mtp_unread exaone4 2 'exaone4.cpp:39-43, always'
mtp_unread glm4moe 2 glm4-moe.cpp:38-39
mtp_unread step35 2 step35.cpp:49-50
mtp_unread cohere2moe 2 cohere2moe.cpp:52-53
mtp_unread hy_v3 2 hy-v3.cpp:34-35
mtp_unread deepseek2 2 deepseek2.cpp:65-66
mtp_unread deepseek32 2 deepseek32.cpp:55-56
mtp_unread glm-dsa 2 glm-dsa.cpp:88-89
mtp_unread qwen35 2 qwen35.cpp:38
mtp_unread qwen35moe 2 qwen35moe.cpp:41
mtp_unread qwen3next 2 qwen3next.cpp:40
mtp_unread nemotron_h_moe 3 nemotron-h.cpp:54

# ------------------------------------------------------------------ helpers
# decode NAME PLANNER ORACLE ARGS...: a decode into $work/NAME.out; sets
# hash (empty unless finite logits) and nmapped (its MAPPED buffers)
decode() {
  local name=$1
  oracle_run "$work/$name" "$2" "$3" --threads 1 "${@:4}"
  hash=$(sed -n 's/^DECODE ok kind=[a-z]* n_tokens=[0-9]* n_out=[0-9]* hash=\([0-9a-f]*\) finite=1$/\1/p' "$work/$name.out")
  nmapped=$(grep -c '^MAPPED ' "$work/$name.lines")
}

# result KEY ok|FAIL TEXT: one line of KEY's results
result() { printf '%-4s %s\n' "$2" "$3" >>"$work/results/$1"; }

# tensors MODEL: "name shard offset size" of every tensor with bytes
tensors() {
  "$ggufmap" inspect "$1" --json | node -e '
    const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const t of j.tensors) if (t.size > 0) console.log(t.name, t.shard, t.offset, t.size)'
}

# overwritten KEY MODEL NAME OFFSET SIZE: the unpatched hash of MODEL with
# that tensor's bytes set to 0xFF, in $hash
overwritten() {
  local copy=$work/$1.corrupt.gguf
  cp "$2" "$copy"
  head -c "$5" /dev/zero | tr '\0' '\377' | dd of="$copy" bs=65536 seek="$4" oflag=seek_bytes conv=notrunc status=none
  decode "$1.corrupt" default "$oracle" --decode "$ntok" "$copy"
}

# sensitive KEY MODEL HASH: every tensor overwritten in turn changes the
# hash, but those named unread, which must not
sensitive() {
  local key=$1 model=$2 clean=$3 regex=${unread[$1]:-} name shard offset size same="" moved="" n=0 skipped=0
  while read -r name shard offset size; do
    overwritten "$key" "$model" "$name" "$offset" "$size"
    if [[ -n $regex && $name =~ $regex ]]; then
      skipped=$((skipped + 1))
      [[ $hash == "$clean" ]] || moved+=" $name"
    else
      n=$((n + 1))
      [[ $hash == "$clean" ]] && same+=" $name"
    fi
  done < <(tensors "$model")
  rm -f "$work/$key.corrupt.gguf"
  if (( n == 0 )); then
    result "$key" FAIL "$key: no tensors listed by $(q "$ggufmap" inspect "$model" --json)"
  elif [[ -n $same || -n $moved ]]; then
    [[ -z $same ]] || result "$key" FAIL "$key: overwriting these tensors leaves the logits hash $clean unchanged:$same"
    [[ -z $moved ]] || result "$key" FAIL "$key: named as unread (${why[$key]}), yet overwriting these changes the hash:$moved"
  elif (( skipped )); then
    result "$key" ok "$key: each of its $n tensors, overwritten, changes the logits hash; $skipped unread leave it: ${why[$key]}"
  else
    result "$key" ok "$key: each of its $n tensors, overwritten, changes the logits hash"
  fi
}

# one_load KEY LOAD MODEL: the unpatched build and the patched one under
# every planner decode alike; sets more when the default planner mapped more
# buffers than the unpatched build
one_load() {
  local key=$1 load=$2 model=$3 oargs want base p bad="" counts="" case=$1.$2
  read -r -a oargs <<<"${loads[$load]}"
  decode "$case.unpatched" default "$oracle" "${oargs[@]}" --decode "$ntok" "$model"
  want=$hash base=$nmapped
  if [[ -z $want ]]; then
    result "$key" FAIL "$case: the unpatched llama.cpp decoded no finite logits: $(q "$oracle" "${oargs[@]}" --threads 1 --decode "$ntok" "$model") ($(grep -E '^(DECODE|RESULT|ERR|ABORT)' "$work/$case.unpatched.out" | head -3 | tr '\n' ' '))"
    return
  fi
  [[ $load == mmap ]] && sensitive "$key" "$model" "$want"
  for p in "${planners[@]}"; do
    decode "$case.$p" "$p" "$patched" "${oargs[@]}" --decode "$ntok" "$model"
    counts+=" $p:$nmapped"
    [[ $hash == "$want" ]] || bad+=" $p:${hash:-none}"
    if [[ $p == default ]] && (( nmapped > base )); then more+=" $load"; fi
  done
  if [[ -n $bad ]]; then
    result "$key" FAIL "$case: logits hash $want unpatched, patched$bad: LLAMA_ARG_MMAP_PLANNER=P $(q "$patched" "${oargs[@]}" --threads 1 --decode "$ntok" "$model")"
  else
    result "$key" ok "$case: hash $want from every build; mapped buffers unpatched $base, patched$counts"
  fi
}

# one_fixture KEY|LOADS|ARGS: the fixture written, then each of its loads
one_fixture() {
  local key fixture_loads fixture_args fargs model load more=""
  IFS='|' read -r key fixture_loads fixture_args <<<"$1"
  read -r -a fargs <<<"$fixture_args"
  model=$work/$key.gguf
  if ! "$fixture" "${fargs[@]}" -o "$model" >"$work/$key.maker.log" 2>&1; then
    result "$key" FAIL "$key: the fixture maker failed: $(q "$fixture" "${fargs[@]}" -o "$model")"
    return
  fi
  for load in $fixture_loads; do
    one_load "$key" "$load" "$model"
  done
  [[ -n $more ]] || result "$key" FAIL "$key: the patched build never mapped more buffers than the unpatched one: nothing was tested"
  # the files of a fixture that passed are not needed
  grep -q '^FAIL' "$work/results/$key" || rm -f "$model" "$work/$key".*
}

# ------------------------------------------------------------------ the run
start=$SECONDS
printf '%s\n' "${fixtures[@]}" >"$work/fixtures.txt"
split -n "r/$jobs" "$work/fixtures.txt" "$work/part."
for part in "$work"/part.*; do
  ( while IFS= read -r f; do one_fixture "$f"; done <"$part" ) &
done
wait

passed=0 failed=0
for f in "${fixtures[@]}"; do
  key=${f%%|*}
  if [[ -f $work/results/$key ]]; then cat "$work/results/$key"; else echo "FAIL $key: no result"; failed=$((failed + 1)); fi
done
passed=$((passed + $(cat "$work"/results/* 2>/dev/null | grep -c '^ok ')))
failed=$((failed + $(cat "$work"/results/* 2>/dev/null | grep -c '^FAIL ')))
echo "${#fixtures[@]} architectures, $((SECONDS - start)) s, $jobs jobs"
echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
