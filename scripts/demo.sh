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
# Each step shows the lines that carry the story; the command line is printed
# so the whole output is one command away.  The folders are removed at the end.
set -euo pipefail
build=${1:-build}
fixture="$build/tools/fixture/ggufmap-fixture"
ggufmap="$build/tools/ggufmap"
for b in "$fixture" "$ggufmap"; do
  [[ -x $b ]] || { echo "demo: $b is missing; run 'make build' first" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-demo.XXXXXX")
trap 'rm -rf "$dir"' EXIT
model=$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf
repacked=$dir/repacked/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf
bold=; plain=
if [[ -t 1 && -z ${NO_COLOR:-} && ${TERM:-dumb} != dumb ]]; then bold=$'\e[1m' plain=$'\e[0m'; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*" | sed "s|$dir/||g"; }

"$fixture" --replica qwen3.8-flash-next -o "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL" >/dev/null
mkdir "$dir/repacked"

step "1. the model: $(du -sh --apparent-size "$dir" | cut -f1) in 4 shards ($(du -sh "$dir" | cut -f1) on disk: a sparse replica)"
show ggufmap inspect "$model" --no-tensors
"$ggufmap" inspect "$model" --no-tensors | sed -n '/^architecture/,/^tensors/p; /^shards/,/^$/p' | sed "s|$dir/||g"

# plan_story MODEL PATTERN: plan for a 128 GB Mac, the lines matching PATTERN, the verdict
plan_story() {
  show ggufmap plan "$1" --device metal -ngl all --limit 96G
  local status=0
  "$ggufmap" plan "$1" --device metal -ngl all --limit 96G --no-picture >"$dir/plan.txt" || status=$?
  grep -E "$2" "$dir/plan.txt" | sed -n '1,/^     then/p' | sed "s|$dir/||g"
  echo "(exit status $status: $([[ $status == 0 ]] && echo it fits || echo llama.cpp does not fit))"
}

step "2. llama.cpp on a 128 GB Mac (Metal, every layer on the GPU, 96 GiB for the GPU)"
plan_story "$model" 'load_tensors|foreign: [0-9]|^working set|^CPU side|llama.cpp today|loader, |^next steps|^  1\. |^       ggufmap repack|^     then'

step "3. the fix: repack (lossless, verified; the replica's zeros stay holes)"
show ggufmap repack "$model" --device metal -ngl all -o "$repacked"
"$ggufmap" repack "$model" --device metal -ngl all -o "$repacked" --no-progress |
  grep -E '^placement|^given|^output|^written' | sed "s|$dir/||g"

step "4. plan again"
plan_story "$repacked" 'load_tensors|^working set|^CPU side|llama.cpp today'

# fit_story MODEL: the whole run at 256K context on a 128 GB Mac
fit_story() {
  show ggufmap fit "$1" --device metal -c 262144 --mem 128G
  local status=0
  "$ggufmap" fit "$1" --device metal -c 262144 --mem 128G >"$dir/fit.txt" || status=$?
  grep -E "^  kv |^  compute|^working set|llama.cpp today|repacked \(planned\)" "$dir/fit.txt" | sed "s|$dir/||g"
  echo "(exit status $status: $([[ $status == 0 ]] && echo it fits || echo it does not fit))"
}

step "5. the whole run at its full 256K context: weights + KV cache + compute buffers (fit)"
fit_story "$model"
echo "after the repack:"
fit_story "$repacked"

step "6. ggufmap's own loader on a replica scaled to this machine: wired (mlocked) bytes, measured by the kernel"
bash "$(dirname "$0")/../bench/load_scaled.sh" "$build" 2G | grep -vE '^command:|^$'
