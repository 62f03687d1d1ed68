#!/usr/bin/env bash
# make demo: the main job on an embedded example.  Builds the layout replica
# of Qwen3.8-Flash-Next (4 shards, ~103.7 GiB apparent size, sparse: almost no
# disk) in a temporary folder, reads it the way llama.cpp does with
# `ggufmap inspect`, then diagnoses it with `ggufmap plan` for a 128 GB Mac
# (Metal, full offload, 96 GiB working-set limit): what llama.cpp maps, the
# 26.8 GiB CPU table inside the GPU span, and what a tight loader maps; then
# repacks it (losslessly, sparse) so that today's llama.cpp maps nothing
# foreign, shows the plan again, and measures the loader's saving with mlock
# on a replica scaled to this machine.
# The folders are removed at the end.
set -euo pipefail
build=${1:-build}
fixture="$build/tools/fixture/ggufmap-fixture"
ggufmap="$build/tools/ggufmap"
for b in "$fixture" "$ggufmap"; do
  [[ -x $b ]] || { echo "demo: $b is missing; run 'make build' first" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/ggufmap-demo.XXXXXX")
trap 'rm -rf "$dir"' EXIT

echo "== making the Qwen3.8-Flash-Next layout replica (sparse) in $dir"
"$fixture" --replica qwen3.8-flash-next -o "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL" >/dev/null
mkdir "$dir/repacked"
ls -ls "$dir" | sed 's/^/   /'
echo "   (first column: KiB on disk; sizes: apparent bytes)"
echo
echo "== ggufmap inspect $dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00002-of-00004.gguf"
echo "   (any shard leads to the whole model)"
"$ggufmap" inspect "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00002-of-00004.gguf"
echo
echo "== ggufmap plan --device metal -ngl all --limit 96G (a 128 GB Mac)"
"$ggufmap" plan "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf" --device metal -ngl all --limit 96G
echo
echo "== the fix: ggufmap repack (lossless; the replica's holes stay holes), then plan again"
"$ggufmap" repack "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf" --device metal -ngl all \
  -o "$dir/repacked/Qwen3.8-Flash-Next-UD-Q4_K_XL.gguf"
echo
"$ggufmap" plan "$dir/repacked/Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf" --device metal -ngl all \
  --limit 96G --no-picture
echo
echo "== the loader's saving, measured by the kernel (bench/load_scaled.sh: a 2 GiB CPU table"
echo "   between GPU tensors, wired as a Metal residency set wires them; llama.cpp's span vs tight)"
bash "$(dirname "$0")/../bench/load_scaled.sh" "$build" 2G
