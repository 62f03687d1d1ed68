#!/usr/bin/env bash
# Every command on a FIFO, a directory and a character device: refused at
# once with exit 2 and "not a regular file", never blocked waiting for a
# writer (issue 13, item 4).  Each run has 10 s (timeout's 124 fails it).
#   special_files.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3
. "$(dirname "$0")/../repack/lib.sh" # ok, bad, summary; a fresh $work

"$fixture" --arch llama -o "$work/m.gguf" >/dev/null || bad "fixture"
mkfifo "$work/fifo.gguf" && ok || bad "mkfifo"
for f in "$work/fifo.gguf" "$work" /dev/zero; do
  for cmd in "inspect F" "plan F" "hash F" "verify F M" "verify M F" "repack F -o $work/out.gguf" "repack F --dry-run" \
             "load F"; do
    args=${cmd//F/$f}
    args=${args//M/$work/m.gguf}
    # shellcheck disable=SC2086
    timeout 10 "$ggufmap" $args >/dev/null 2>"$work/err"; st=$?
    [[ $st == 2 ]] && ok || bad "ggufmap $args: exit $st (124: it blocked): $(head -c 300 "$work/err")"
    grep -q "not a regular file" "$work/err" && ok || bad "ggufmap $args: message $(head -c 300 "$work/err")"
  done
done
[[ ! -e $work/out.gguf ]] && ok || bad "an output was written"
summary
