#!/usr/bin/env bash
# repack on hostile inputs, and its signals (issue 13, item 3):
#   - a 128-byte model whose one tensor is blk.999999.x, and the same with
#     an expert tensor (blk.999999.ffn_up_exps.weight): repack (and its dry
#     run) refuses it as llama.cpp does (no architecture) in well under a
#     second and little memory (once 3 s and 222 MB, and over 12 minutes for
#     the expert name, when layers were counted from the names);
#   - keys that hold a NUL byte are copied byte for byte: repack works,
#     verify says identical, every key's bytes are in the output;
#   - the family of placements compared: as before for a 2-layer MoE, 256
#     -ngl and 256 MoE cases for 400 expert layers;
#   - SIGTERM, SIGINT, SIGHUP while planning a model with 512 MoE layers
#     (planning takes seconds) and while copying (slowed by the test hook):
#     the process is gone within a second, exit 128 + the signal, "interrupted" in that
#     phase's words, no output, no temporary file, no scratch folder;
#   - bad input is exit 2, never 1 (the usage status): a corrupt model, a
#     FIFO, a directory.
#   hostile.sh GGUFMAP FIXTURE_MAKER WORKDIR GGUFMAP_TESTHOOKS HOSTILE_MAKER RUNSTAT
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3 hooks=$4 hostile=$5 runstat=$6
. "$(dirname "$0")/lib.sh"
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

# runs "$@" under runstat; sets cpu (user + system seconds: the work, whatever
# else the machine runs), wall (seconds) and rss (peak KiB); returns its status
measure() {
  local line t TIMEFORMAT='%3U %3S'
  t=$( { time "$runstat" "$@" >"$work/runstat" 2>"$work/err"; } 2>&1 )
  line=$(cat "$work/runstat")
  cpu=$(awk '{ print $1 + $2 }' <<<"$t")
  wall=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' <<<"$line") rss=$(sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p' <<<"$line")
  return "$(sed -n 's/.*status=\([0-9]*\).*/\1/p' <<<"$line")"
}
fast() { awk -v w="$1" 'BEGIN { exit !(w < 1.0) }'; }

# ---- a tensor a million layers up, plain and as an expert: no
# general.architecture, so llama.cpp refuses the file (and so does repack,
# before any work: the layer count is never taken from the names)
for name in blk.999999.x blk.999999.ffn_up_exps.weight; do
  f=$work/$name.gguf
  "$hostile" one-tensor "$name" "$f" || bad "cannot make $name"
  [[ $(stat -c %s "$f") == 128 ]] && ok || bad "$name: $(stat -c %s "$f") bytes, expected 128"
  for mode in --dry-run "-o $work/$name.out.gguf"; do
    # shellcheck disable=SC2086
    measure "$ggufmap" repack "$f" $mode; st=$?
    [[ $st == 2 ]] && grep -q "general.architecture" "$work/err" && ok ||
      bad "$name: repack $mode: exit $st, expected 2 naming general.architecture: $(cat "$work/err")"
    fast "$cpu" && ok || bad "$name: repack $mode took $cpu s of CPU"
    (( rss < 100 * 1024 )) && ok || bad "$name: repack $mode peaked at $rss KiB"
    echo "$name: repack $mode: exit $st in $cpu s of CPU ($wall s), $rss KiB"
  done
  [[ ! -e $work/$name.out.gguf ]] && ok || bad "$name: a refused repack left an output"
done

# ---- keys holding a NUL byte are copied byte for byte
"$fixture" --arch qwen3moe --shards 2 -o "$work/m.gguf" >/dev/null || bad "fixture"
"$hostile" nul-keys "$work/m-00001-of-00002.gguf" "$work/nul-00001-of-00002.gguf" || bad "cannot add NUL keys"
cp "$work/m-00002-of-00002.gguf" "$work/nul-00002-of-00002.gguf"
"$ggufmap" repack "$work/nul-00001-of-00002.gguf" --move-across-shards -o "$work/nul-out.gguf" >/dev/null 2>"$work/err"; st=$?
[[ $st == 0 ]] && ok || bad "repack with NUL keys: exit $st: $(cat "$work/err")"
"$ggufmap" verify "$work/nul-00001-of-00002.gguf" "$work/nul-out-00001-of-00002.gguf" >"$work/out"; st=$?
[[ $st == 0 ]] && grep -q '^same' "$work/out" && ok || bad "verify after repack with NUL keys: exit $st $(cat "$work/out")"
for key in 'test.nul\x00key' 'tokenizer.ggml.model\x00x' 'a\x00b\x00c'; do
  n=$(grep -c -a -P "$key" "$work/nul-out-00001-of-00002.gguf")
  [[ $n == 1 ]] && ok || bad "key $key: found $n times in the output"
done
d1=$("$ggufmap" hash --digest-only "$work/nul-00001-of-00002.gguf" | cut -d' ' -f5)
d2=$("$ggufmap" hash --digest-only "$work/nul-out-00001-of-00002.gguf" | cut -d' ' -f5)
[[ -n $d1 && $d1 == "$d2" ]] && ok || bad "digest changed by repack with NUL keys: $d1 vs $d2"

# ---- the family of cases: as before for a small model, capped for a big one
# labels MODEL: the placements a dry run lists, one per line
labels() { "$ggufmap" repack "$1" --dry-run | awk '/^placement/ { on = 1; next } /^(total|output)/ { on = 0 } on { print ($2 ~ /\./ ? $1 : $1 " " $2) }'; }
# increasing FLAG: the values after FLAG in the labels on stdin rise strictly ("all" last)
increasing() { awk -v f="$1" '$1 == f { v = $2 == "all" ? 1e12 : $2; if (n && v <= last) bad = 1; last = v; n++ }
  END { print (bad ? "no" : "yes"), n }'; }
"$fixture" --arch qwen3moe -o "$work/moe2.gguf" >/dev/null || bad "fixture (2 layers)"
got=$(labels "$work/moe2.gguf" | tr '\n' ,)
[[ $got == "-ngl 0,-ngl 1,-ngl 2,-ngl all,--n-cpu-moe 1,--n-cpu-moe 2,--cpu-moe," ]] && ok || bad "family of a 2-layer MoE: $got"
"$fixture" --arch qwen3moe --layers 400 --n-embd 32 --n-ff 32 --n-ff-exp 32 --vocab 64 -o "$work/experts400.gguf" \
  >/dev/null || bad "cannot make 400 expert layers"
labels "$work/experts400.gguf" >"$work/labels"
[[ $(increasing -ngl <"$work/labels") == "yes 256" ]] && ok || bad "-ngl cases of 400 layers: $(increasing -ngl <"$work/labels")"
[[ $(increasing --n-cpu-moe <"$work/labels") == "yes 255" ]] && ok || bad "--n-cpu-moe cases: $(increasing --n-cpu-moe <"$work/labels")"
grep -qx -- "-ngl 400" "$work/labels" && grep -qx -- "--n-cpu-moe 400" "$work/labels" && grep -qx -- '--cpu-moe' "$work/labels" &&
  ok || bad "the largest cases are missing: $(tail -3 "$work/labels")"

# ---- signals: gone within a second, nothing left behind, in both phases
# (the message says which phase the signal found: planning a 512-layer MoE
# model takes seconds, and the copy is slowed by the test hook)
"$fixture" --arch qwen3moe --layers 512 --n-embd 32 --n-ff 32 --n-ff-exp 32 --vocab 64 -o "$work/moe512.gguf" >/dev/null ||
  bad "fixture (512 layers)"
"$fixture" --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 2 -o "$work/big.gguf" >/dev/null ||
  bad "fixture (big)"

# interrupt SIGNAL WHEN LABEL PHASE CMD...: starts CMD, sends SIGNAL after
# WHEN seconds, and checks the exit (128 + the signal's number, as a shell
# reports a command the signal ended: repack cleans up, then lets the
# signal end it; within a second, "interrupted" in
# PHASE's words) and that $work/sig and $TMPDIR are empty afterwards.
interrupt() {
  local sig=$1 when=$2 label=$3 phase=$4; shift 4
  rm -rf "$work/sig" && mkdir -p "$work/sig"
  "$@" >/dev/null 2>"$work/err" &
  local pid=$!
  sleep "$when"
  local t0; t0=$(date +%s%N)
  kill -s "$sig" "$pid"; wait "$pid"; local st=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "$label: SIG$sig answered in $ms ms, exit $st"
  local want; want=$(( 128 + $(kill -l "$sig") ))
  [[ $st == "$want" ]] && ok || bad "$label, SIG$sig: exit $st, expected $want: $(cat "$work/err")"
  (( ms < 1000 )) && ok || bad "$label, SIG$sig: took $ms ms to stop"
  grep -q "interrupted by a signal.*$phase" "$work/err" && ok || bad "$label, SIG$sig: message $(cat "$work/err")"
  [[ -z $(ls -A "$work/sig") ]] && ok || bad "$label, SIG$sig: left $(ls "$work/sig")"
  [[ -z $(ls -A "$TMPDIR") ]] && ok || bad "$label, SIG$sig: left $(ls "$TMPDIR") in TMPDIR"
}
for sig in TERM INT HUP; do
  interrupt "$sig" 0.5 planning "choosing the order" "$ggufmap" repack "$work/moe512.gguf" -o "$work/sig/o.gguf"
  interrupt "$sig" 3 copying "partial output removed" \
    env GGUFMAP_REPACK_TEST_DELAY_US=300000 "$hooks" repack "$work/big.gguf" -o "$work/sig/o.gguf" --threads 1
done

# ---- bad input: exit 2, never 1
cp "$work/big.gguf" "$work/corrupt.gguf"
printf 'GGUX' | dd of="$work/corrupt.gguf" bs=1 conv=notrunc status=none
mkfifo "$work/fifo.gguf"
for f in "$work/corrupt.gguf" "$work/fifo.gguf" "$work" "$work/missing.gguf"; do
  timeout 10 "$ggufmap" repack "$f" -o "$work/never.gguf" >/dev/null 2>"$work/err"; st=$?
  [[ $st == 2 ]] && ok || bad "repack of $f: exit $st, expected 2: $(cat "$work/err")"
done
[[ ! -e $work/never.gguf ]] && ok || bad "bad input left an output"

summary
