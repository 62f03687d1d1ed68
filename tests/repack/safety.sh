#!/usr/bin/env bash
# repack's safety and verification, and the hash/verify commands:
#   - a byte flipped in a copy is caught by `verify` and (test hook
#     GGUFMAP_REPACK_TEST_FLIP) by repack's own read-back check, which then
#     leaves nothing behind;
#   - existing outputs are refused, a read-only input works;
#   - `hash` prints gguf_hash.py's lines (checked against sha256sum of the
#     bytes) and a digest that survives repacking and resharding;
#   - SIGTERM removes the partial output; kill -9 at 20 random points leaves
#     the input intact and either no output or a complete, verified one;
#   - the output does not stay in the page cache (each piece is dropped once
#     the disk has it and it was read back): fincore shows it nearly absent;
#   - progress: none when stderr is a file, lines with --progress, a line
#     redrawn in place on a TTY (script(1) provides one);
#   - ENOSPC on a small tmpfs fails cleanly (free-space check, and a real
#     ENOSPC mid-write with the check disabled).  Needs root to mount: FAILS
#     (does not skip) when the mount is refused.
#   safety.sh GGUFMAP FIXTURE_MAKER WORKDIR GGUFMAP_TESTHOOKS
# GGUFMAP_TESTHOOKS is the tool built on the library's test build: the only
# one that reads the GGUFMAP_REPACK_TEST_* hooks.
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3 hooks=$4
. "$(dirname "$0")/lib.sh"
fx() { "$fixture" "$@" >/dev/null || bad "fixture maker $*"; }

# ---- hash: gguf_hash.py's lines, checked against sha256sum of each range
fx --arch llama --type q4_K --n-embd 256 -o "$work/a.gguf"
"$ggufmap" hash "$work/a.gguf" >"$work/hash.out" && ok || bad "hash failed"
"$ggufmap" inspect --json "$work/a.gguf" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const t of JSON.parse(s).tensors)console.log(t.name,t.offset,t.size)})' >"$work/ranges"
n=0
while read -r name off size; do
  want=$(tail -c +$((off + 1)) "$work/a.gguf" | head -c "$size" | sha256sum | cut -d' ' -f1)
  grep -qx "sha256    $want  $work/a.gguf:$name" "$work/hash.out" && n=$((n + 1)) || bad "hash line of $name"
done <"$work/ranges"
[[ $n -gt 10 ]] && ok || bad "only $n tensor lines checked"
want=$(while read -r name off size; do tail -c +$((off + 1)) "$work/a.gguf" | head -c "$size"; done <"$work/ranges" | sha256sum | cut -d' ' -f1)
grep -qx "sha256    $want  $work/a.gguf" "$work/hash.out" && ok || bad "whole-data sha256 line"
grep -q "^digest    [0-9a-f]\{64\}  " "$work/hash.out" && ok || bad "no digest line"

# ---- repack -> verify, digest kept across resharding
fx --arch qwen3moe --type q8_0 --shards 3 --order shuffle:2 -o "$work/s.gguf"
"$ggufmap" repack "$work/s-00002-of-00003.gguf" --move-across-shards -o "$work/r.gguf" >/dev/null 2>"$work/err" && ok || bad "repack: $(cat "$work/err")"
"$ggufmap" verify "$work/s-00001-of-00003.gguf" "$work/r-00001-of-00003.gguf" >/dev/null && ok || bad "verify after repack"
d1=$("$ggufmap" hash --digest-only "$work/s-00001-of-00003.gguf" | cut -d' ' -f5)
d2=$("$ggufmap" hash --digest-only "$work/r-00003-of-00003.gguf" | cut -d' ' -f5)
[[ -n $d1 && $d1 == "$d2" ]] && ok || bad "digest changed: $d1 vs $d2"

# ---- page cache: the output's pieces leave it once on disk and read back
fx --arch llama --type f32 --n-embd 1024 --n-ff 4096 --vocab 8192 --layers 2 -o "$work/pc.gguf"
"$ggufmap" repack "$work/pc.gguf" -o "$work/pc-out.gguf" >/dev/null 2>"$work/err" && ok || bad "repack (page cache): $(cat "$work/err")"
cat "$work/pc.gguf" >/dev/null
res_out=$(fincore -b -n -o RES "$work/pc-out.gguf" | tr -d ' ') res_in=$(fincore -b -n -o RES "$work/pc.gguf" | tr -d ' ')
size=$(stat -c %s "$work/pc-out.gguf")
echo "page cache after repack: output $res_out of $size bytes, input $res_in"
# the input, just read, is all there (fincore works here); of the output at
# most the header pages and a few pieces' edges
(( res_in * 10 >= size * 9 )) && ok || bad "fincore sees only $res_in bytes of the input in the page cache"
(( res_out < 4 * 1024 * 1024 && size > 64 * 1024 * 1024 )) && ok || bad "the output stayed in the page cache: $res_out of $size bytes (file system: $(stat -f -c %T "$work"))"

# ---- progress: bytes, rate and ETA on a TTY or with --progress; nothing in a file
[[ ! -s $work/err ]] && ok || bad "repack wrote to a non-TTY stderr without --progress: $(head -c 300 "$work/err")"
"$ggufmap" repack "$work/pc.gguf" -o "$work/pc-p.gguf" --progress >/dev/null 2>"$work/err" && ok || bad "repack --progress failed"
grep -q '^repack \[#*\.*\] .* / 184\.[0-9]* MiB .*% .*/s ETA [0-9]*s$' "$work/err" && ok || bad "repack --progress line: $(head -c 300 "$work/err")"
tail -n 1 "$work/err" | grep -q ' 100% ' && ok || bad "repack --progress does not end at 100%: $(tail -n 1 "$work/err")"
"$ggufmap" hash --progress --digest-only "$work/pc.gguf" >/dev/null 2>"$work/err" && ok || bad "hash --progress failed"
tail -n 1 "$work/err" | grep -q '^hash .* 100% .*ETA' && ok || bad "hash --progress line: $(tail -n 1 "$work/err")"
script -qec "$(printf '%q ' "$ggufmap" repack "$work/pc.gguf" -o "$work/pc-t.gguf")" /dev/null >"$work/tty" 2>&1 && ok || bad "repack on a TTY failed: $(tail -c 300 "$work/tty")"
grep -q $'\rrepack \[' "$work/tty" && grep -q $'100%.*ETA 0s\e\[K' "$work/tty" && ok || bad "no progress redrawn on a TTY: $(head -c 300 "$work/tty" | od -c | head -5)"
rm -f "$work"/pc-*.gguf

# ---- one flipped byte: verify names the tensor (exit 3: the models differ)
cp "$work/a.gguf" "$work/flip.gguf"
read -r name off size < <(grep '^blk.1.attn_q.weight ' "$work/ranges")
printf '\x5a' | dd of="$work/flip.gguf" bs=1 seek=$((off + size / 2)) conv=notrunc status=none
"$ggufmap" verify "$work/a.gguf" "$work/flip.gguf" >"$work/out"; st=$?
[[ $st == 3 ]] && ok || bad "verify of a flipped byte: exit $st"
grep -q "tensor 'blk.1.attn_q.weight': data differs" "$work/out" && ok || bad "verify did not name the tensor: $(cat "$work/out")"
"$ggufmap" verify "$work/a.gguf" "$work/none.gguf" >/dev/null 2>&1; st=$?
[[ $st == 2 ]] && ok || bad "verify of a missing file: exit $st, expected 2"

# ---- flipped byte during repack: the read-back check catches it, nothing remains
mkdir -p "$work/fl"
GGUFMAP_REPACK_TEST_FLIP=blk.0.ffn_up.weight "$hooks" repack "$work/a.gguf" -o "$work/fl/o.gguf" >/dev/null 2>"$work/err"; st=$?
[[ $st == 2 ]] && ok || bad "repack with a corrupted copy: exit $st"
grep -q "tensor 'blk.0.ffn_up.weight': read-back check failed" "$work/err" && ok || bad "read-back message: $(cat "$work/err")"
[[ -z $(ls -A "$work/fl") ]] && ok || bad "corrupted repack left files: $(ls "$work/fl")"

# ---- the release tool has no hooks: the same variable changes nothing
mkdir -p "$work/nohook"
GGUFMAP_REPACK_TEST_FLIP=blk.0.ffn_up.weight "$ggufmap" repack "$work/a.gguf" -o "$work/nohook/o.gguf" >/dev/null 2>"$work/err" &&
  "$ggufmap" verify "$work/a.gguf" "$work/nohook/o.gguf" >/dev/null && ok || bad "the release ggufmap obeyed a test hook: $(cat "$work/err")"

# ---- refuses existing outputs (the input among them); read-only input
"$ggufmap" repack "$work/a.gguf" -o "$work/a.gguf" >/dev/null 2>"$work/err"; st=$?
[[ $st == 2 ]] && grep -q "exists" "$work/err" && ok || bad "repack onto its input: exit $st $(cat "$work/err")"
mkdir -p "$work/ro" && cp "$work/a.gguf" "$work/ro/in.gguf" && chmod 0444 "$work/ro/in.gguf"
sum=$(sha256sum <"$work/ro/in.gguf")
"$ggufmap" repack "$work/ro/in.gguf" -o "$work/ro/out.gguf" --order canonical >/dev/null 2>"$work/err" && ok || bad "read-only input: $(cat "$work/err")"
[[ $(sha256sum <"$work/ro/in.gguf") == "$sum" ]] && ok || bad "input changed"
"$ggufmap" repack "$work/ro/in.gguf" -o "$work/ro/out.gguf" >/dev/null 2>&1; st=$?
[[ $st == 2 ]] && ok || bad "second repack onto an existing output: exit $st"

# ---- a bigger model for the interruption tests: ~10 MB, slowed writer
fx --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 2 --shards 3 -o "$work/big.gguf"
insum=$(cat "$work"/big-0000*.gguf | sha256sum)
# SIGTERM: partial output removed, then the signal ends it (exit 143)
mkdir -p "$work/term"
GGUFMAP_REPACK_TEST_DELAY_US=30000 "$hooks" repack "$work/big-00001-of-00003.gguf" -o "$work/term/o.gguf" --threads 1 >/dev/null 2>"$work/err" &
pid=$!; sleep 0.4; kill -TERM $pid; wait $pid; st=$?
[[ $st == 143 ]] && ok || bad "SIGTERM: exit $st, expected 143 (128 + SIGTERM, as the shell reports a command the signal ended)"
[[ -z $(ls -A "$work/term") ]] && ok || bad "SIGTERM left files: $(ls "$work/term")"
grep -q "interrupted" "$work/err" && ok || bad "SIGTERM message: $(cat "$work/err")"
# kill -9 at 20 random points
RANDOM=42
complete=0 none=0
for i in $(seq 1 20); do
  k=$work/k$i; mkdir -p "$k"
  GGUFMAP_REPACK_TEST_DELAY_US=4000 "$hooks" repack "$work/big-00001-of-00003.gguf" -o "$k/o.gguf" --threads 2 >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  finals=$(ls "$k" | grep -c -v -e 'tmp-' -e 'ggufmap-journal') # what a kill leaves: tests/repack/killed.sh
  if [[ $finals == 0 ]]; then none=$((none + 1)); ok
  elif [[ $finals == 3 ]] && "$ggufmap" verify "$work/big-00001-of-00003.gguf" "$k/o-00001-of-00003.gguf" >/dev/null; then
    complete=$((complete + 1)); ok
  else bad "kill -9 #$i: partial output: $(ls "$k")"; fi
  rm -rf "$k"
done
[[ $(cat "$work"/big-0000*.gguf | sha256sum) == "$insum" ]] && ok || bad "kill -9 changed the input"
echo "kill -9: $none times no output, $complete times a complete verified one"

# ---- ENOSPC on a 4 MiB tmpfs
mnt=$work/small
mkdir -p "$mnt"
if mount -t tmpfs -o size=4m tmpfs "$mnt" 2>"$work/err"; then
  "$ggufmap" repack "$work/big-00001-of-00003.gguf" -o "$mnt/o.gguf" >/dev/null 2>"$work/err"; st=$?
  [[ $st == 2 ]] && grep -q "No space left\|free" "$work/err" && ok || bad "free-space check: exit $st $(cat "$work/err")"
  [[ -z $(ls -A "$mnt") ]] && ok || bad "free-space check left files: $(ls "$mnt")"
  GGUFMAP_REPACK_TEST_NO_SPACE_CHECK=1 "$hooks" repack "$work/big-00001-of-00003.gguf" -o "$mnt/o.gguf" >/dev/null 2>"$work/err"; st=$?
  [[ $st == 2 ]] && grep -q "No space left" "$work/err" && ok || bad "real ENOSPC: exit $st $(cat "$work/err")"
  [[ -z $(ls -A "$mnt") ]] && ok || bad "ENOSPC left files: $(ls "$mnt")"
  # the same with copy_file_range asked for: across file systems the kernel
  # refuses (EXDEV) and write() takes over, or it copies until ENOSPC
  GGUFMAP_REPACK_TEST_NO_SPACE_CHECK=1 "$hooks" repack "$work/big-00001-of-00003.gguf" -o "$mnt/o.gguf" --copy kernel >/dev/null 2>"$work/err"; st=$?
  [[ $st == 2 ]] && grep -q "No space left" "$work/err" && ok || bad "real ENOSPC, --copy kernel: exit $st $(cat "$work/err")"
  [[ -z $(ls -A "$mnt") ]] && ok || bad "ENOSPC (--copy kernel) left files: $(ls "$mnt")"
  [[ $(cat "$work"/big-0000*.gguf | sha256sum) == "$insum" ]] && ok || bad "ENOSPC changed the input"
  umount "$mnt"
else
  bad "cannot mount a tmpfs for the ENOSPC test (needs root): $(cat "$work/err")"
fi

summary
