#!/usr/bin/env bash
# Issue 29465's model: the Qwen3.8-Flash-Next replica (4 shards, 103.7 GiB,
# sparse) repacked for a Mac (--device metal -ngl all) maps 0 foreign bytes.
# Prints plan before and after; the output must stay sparse; verify; and the
# real llama.cpp's buffers for the output equal plan's prediction.
#
# The forced-POSIX build (GGUFMAP_PORTABLE=posix: make test's sanitized one)
# cannot see holes (src/os.h: no SEEK_DATA in POSIX.1-2008): it would read
# the replica's 103.7 GiB of holes three times (repack, then verify's two
# models), about 15 minutes here.  It runs the same checks on the scaled
# replica instead (one shard, the same CPU-side table between GPU tensors,
# 2 GiB of it), where its output must stay sparse all the same: repack does
# not write all-zero chunks.
#   replica.sh GGUFMAP FIXTURE_MAKER ORACLE WORKDIR   (GGUFMAP_PORTABLE in the environment)
set -uo pipefail
ggufmap=$1 fixture=$2 oracle=$3 work=$4
. "$(dirname "$0")/lib.sh"

if [[ ${GGUFMAP_PORTABLE:?set by CMake: native or posix} == posix ]]; then
  echo "posix build: the scaled replica (2 GiB table) in place of the 103.7 GiB one"
  "$fixture" --replica scaled --scale-bytes 2G -o "$work/Q.gguf" >/dev/null || bad "fixture maker"
  in=$work/Q.gguf out=$work/R.gguf want_foreign=2147483648
else
  "$fixture" --replica qwen3.8-flash-next -o "$work/Q" >/dev/null || bad "fixture maker"
  in=$work/Q-00001-of-00004.gguf out=$work/R-00001-of-00004.gguf want_foreign=28000000000
fi
echo "=== plan before"
"$ggufmap" plan "$in" --device metal -ngl all --limit 96G --no-picture | grep -E 'MTL0_Mapped|CPU_Mapped|llama.cpp today|tight loader'
f=$(foreign "$in" --device metal -ngl all)
[[ $f -ge $want_foreign ]] && ok || bad "the replica should start with its table foreign ($want_foreign bytes or more), got $f"
echo "=== repack"
"$ggufmap" repack "$in" --device metal -ngl all -o "$work/R.gguf" 2>&1 && ok || bad "repack failed"
echo "=== plan after"
"$ggufmap" plan "$out" --device metal -ngl all --limit 96G --no-picture | grep -E 'MTL0_Mapped|CPU_Mapped|llama.cpp today|tight loader'
f=$(foreign "$out" --device metal -ngl all)
[[ $f == 0 ]] && ok || bad "$f foreign bytes after repack"
kb=$(du -sk "$work" | cut -f1)
echo "disk used by input and output: $kb KiB"
(( kb < 65536 )) && ok || bad "the output is not sparse: $kb KiB on disk"
"$ggufmap" verify "$in" "$out" && ok || bad "verify"
"$oracle" --fake-gpu metal --ngl -1 --no-repack --no-populate "$out" >"$work/o.out" 2>"$work/o.err"
grep -q '^RESULT ok' "$work/o.out" && ok || bad "llama.cpp did not load the output: $(grep -E '^(ERR|RESULT)' "$work/o.out" | head -3)"
grep -E '^(MAPPED|ALLOC) ' "$work/o.out" >"$work/o.lines"
"$ggufmap" plan "$out" --device metal -ngl all -nr --cpu x86 --format buffers | grep -E '^(MAPPED|ALLOC) ' >"$work/p.lines"
cmp -s "$work/o.lines" "$work/p.lines" && [[ -s $work/o.lines ]] && ok || { bad "llama.cpp's buffers differ from plan's"; diff "$work/o.lines" "$work/p.lines"; }
echo "llama.cpp:"; cat "$work/o.lines"
rm -rf "$work"
summary
