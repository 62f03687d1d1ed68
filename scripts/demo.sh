#!/usr/bin/env bash
# make demo: the story in a screen or two, on a layout replica of
# Qwen3.8-Flash-Next (4 shards, 103.7 GiB apparent, sparse: almost no disk):
#   1. what the model holds (inspect's summary);
#   2. what llama.cpp maps on a 128 GB Mac (plan --device metal --limit 96G):
#      the 26.8 GiB CPU table inside a GPU span, the verdict, the next step;
#   3. the fix (repack: lossless, the replica's holes stay holes);
#   4. plan again: it fits;
#   5. the whole run at the full 256K context (fit: weights, KV cache,
#      compute buffers) before and after the repack;
#   6. the loader's saving, measured by the kernel on a replica scaled to
#      this machine (bench/load_scaled.sh).
# Each step prints its command line exactly as it runs it (every flag, paths
# relative to the repository's root, where make runs this), then the lines of
# its output that carry the story.  The models stay in BUILD/demo (sparse:
# a few MiB on disk), so every command shown can be run again as printed;
# the last lines say how to make them again.
#
# usage: scripts/demo.sh [BUILD_DIR]   (from the repository's root; default build)
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
fixture="$build/tools/fixture/ggufmap-fixture"
ggufmap="$build/tools/ggufmap"
for b in "$fixture" "$ggufmap"; do
  [[ -x $b ]] || { echo "demo: $b is missing; run 'make build' first" >&2; exit 1; }
done
dir=$build/demo
rm -rf "$dir"
mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model=$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf
repacked=$dir/repacked/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf
make_models=("$fixture" --replica qwen3.8-flash-next -o "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL")
bold=; plain=
if [[ -t 1 && -z ${NO_COLOR:-} && ${TERM:-dumb} != dumb ]]; then bold=$'\e[1m' plain=$'\e[0m'; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
# show CMD...: the command line, as the shell would take it back
show() { printf '$'; printf ' %q' "$@"; printf '\n'; }

"${make_models[@]}" >/dev/null
mkdir "$dir/repacked"

step "1. the model: $(du -sh --apparent-size "$dir" | cut -f1) in 4 shards ($(du -sh "$dir" | cut -f1) on disk: a sparse replica)"
show "$ggufmap" inspect "$model" --no-tensors
"$ggufmap" inspect "$model" --no-tensors | sed -n '/^architecture/,/^tensors/p; /^shards/,/^$/p'

# plan_story MODEL PATTERN: plan for a 128 GB Mac, the lines matching PATTERN, the verdict
plan_story() {
  local cmd=("$ggufmap" plan "$1" --device metal -ngl all --limit 96G --no-picture) status=0
  show "${cmd[@]}"
  "${cmd[@]}" >"$tmp/plan.txt" || status=$?
  grep -E "$2" "$tmp/plan.txt" | sed -n '1,/^     then/p'
  echo "(exit status $status: $([[ $status == 0 ]] && echo it fits || echo llama.cpp does not fit))"
}

step "2. llama.cpp on a 128 GB Mac (Metal, every layer on the GPU, 96 GiB for the GPU)"
plan_story "$model" '^answer:|^  after next step|load_tensors|foreign: [0-9]|^working set|^CPU side|llama.cpp today|loader, |^next steps|^  1\. |^       ggufmap repack|^     then'

step "3. the fix: repack (lossless, verified; the replica's zeros stay holes)"
repack=("$ggufmap" repack "$model" --device metal -ngl all -o "$repacked" --no-progress)
show "${repack[@]}"
"${repack[@]}" | grep -E '^placement|^given|^output|^written'

step "4. plan again"
plan_story "$repacked" 'load_tensors|^working set|^CPU side|llama.cpp today'

# fit_story MODEL: the whole run at 256K context on a 128 GB Mac
fit_story() {
  local cmd=("$ggufmap" fit "$1" --device metal -c 262144 --mem 128G) status=0
  show "${cmd[@]}"
  "${cmd[@]}" >"$tmp/fit.txt" || status=$?
  grep -E "^  kv |^  compute|^working set|llama.cpp today|repacked \(planned\)" "$tmp/fit.txt"
  echo "(exit status $status: $([[ $status == 0 ]] && echo it fits || echo it does not fit))"
}

step "5. the whole run at its full 256K context: weights + KV cache + compute buffers (fit)"
fit_story "$model"
echo "after the repack:"
fit_story "$repacked"

step "6. ggufmap's own loader on a replica scaled to this machine: wired (mlocked) bytes, measured by the kernel"
show bash bench/load_scaled.sh "$build" 2G
bash bench/load_scaled.sh "$build" 2G | grep -vE '^$'

step "the models are kept"
echo "$dir holds the replica and its repack ($(du -sh --apparent-size "$dir" | cut -f1) apparent," \
     "$(du -sh "$dir" | cut -f1) on disk): every command above runs again as printed, from the repository's root"
echo "(repack refuses to overwrite its output: rm $dir/repacked/* before running step 3 again)."
echo "To make the models again:"
show "${make_models[@]}"
