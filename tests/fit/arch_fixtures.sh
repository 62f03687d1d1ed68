# shellcheck shell=bash
# Shared by tests/fit/archs.sh and tests/fit/random.sh (sourced, not run):
# the fixtures of every architecture ggufmap-fixture makes.
#
# The caller sets FIXTURE, WORK and HERE.  make_arch_fixtures fills ARCHS
# (every architecture of `ggufmap-fixture --list-archs`) and writes, per
# architecture, $WORK/A.gguf as the maker makes it (n_embd 64, heads of 16)
# and $WORK/A-w.gguf wider (n_embd 256, heads of 64, 3 layers: quantized
# caches need heads of whole blocks), then the named variants: nemotron_h-4,
# smollm3-5, qwen3-cls, and the three still without a graph (lfm2-swa,
# lfm2-nc, granite-vision: tests/fit/gguf_kv.js).  pooled A prints the
# option a pooled model runs with (the oracle turns embeddings on for them).

# make_fixture NAME ARGS...: $WORK/NAME.gguf
make_fixture() {
  local name=$1
  shift
  "$FIXTURE" "$@" -o "$WORK/$name.gguf" >/dev/null || { echo "FAIL: fixture $name: $*" >&2; exit 1; }
}

# kv_variant NAME BASE ARGS...: $WORK/NAME.gguf, BASE with gguf_kv.js's edits
kv_variant() {
  local name=$1 base=$2
  shift 2
  node "$HERE/gguf_kv.js" "$WORK/$base.gguf" "$WORK/$name.gguf" "$@" || { echo "FAIL: variant $name" >&2; exit 1; }
}

make_arch_fixtures() {
  mapfile -t ARCHS < <("$FIXTURE" --list-archs | awk 'NR > 1 { print $1 }')
  [ "${#ARCHS[@]}" -ge 46 ] || { echo "FAIL: ggufmap-fixture lists ${#ARCHS[@]} architectures, want 46" >&2; exit 1; }
  local a layers
  for a in "${ARCHS[@]}"; do
    layers=()
    case $a in nemotron_h*) layers=(--layers 3) ;; esac   # one Mamba, one FFN, one attention layer
    make_fixture "$a" --arch "$a" "${layers[@]}"
    make_fixture "$a-w" --arch "$a" --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 --layers 3
  done
  make_fixture nemotron_h-4 --arch nemotron_h --layers 4          # attention followed by a Mamba layer
  make_fixture smollm3-5 --arch smollm3 --layers 5                # layer 3 without RoPE
  make_fixture qwen3-cls --arch qwen3 --cls 2                      # a reranker: rank pooling
  # what is still an upper bound (docs/fit.md "Architectures"): variants the
  # maker has no option for
  kv_variant lfm2-swa lfm2-w --set lfm2.attention.sliding_window=u32:64        # the hybrid iswa pair
  kv_variant lfm2-nc lfm2-w --set lfm2.attention.causal=bool:false              # not causal
  kv_variant granite-vision granite-w --set granite.deepstack_mapping=i32s:-1,0,-1 # deepstack inputs
}

pooled() { case $1 in bert*|nomic-bert*|t5encoder*) echo --embedding ;; esac; }
