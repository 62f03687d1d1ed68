#!/usr/bin/env bash
# make demo: the main job on an embedded example.  Builds the layout replica
# of Qwen3.8-Flash-Next (4 shards, ~103.7 GiB apparent size, sparse: almost no
# disk) in a temporary folder, then reads it the way llama.cpp does with
# `ggufmap inspect`.  The folder is removed at the end.
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
ls -ls "$dir" | sed 's/^/   /'
echo "   (first column: KiB on disk; sizes: apparent bytes)"
echo
echo "== ggufmap inspect $dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00002-of-00004.gguf"
echo "   (any shard leads to the whole model)"
"$ggufmap" inspect "$dir/Qwen3.8-Flash-Next-UD-Q4_K_XL-00002-of-00004.gguf"
