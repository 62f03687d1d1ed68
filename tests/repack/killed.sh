#!/usr/bin/env bash
# kill -9 during a split repack (issue 20, item 6): what the killed run left
# is never a partial model as a reader opens it, and the next repack into
# the folder cleans it up, touching only what the killed run's journal
# proves its own (repack_journal.c):
#   - deterministic kill points (test hook GGUFMAP_REPACK_TEST_KILL_AT):
#     after the journal, after each temporary, after the copy, after each
#     rename, after the last; then 12 kills at random moments of a slowed
#     copy.  After each: the input unchanged; the first shard (what
#     llama.cpp opens) exists only when every shard is in place; then the
#     same command again: it settles the killed run (kept when whole,
#     removed when not: "cleaned up after 1 killed repack"), and the folder
#     holds a whole verified output and nothing else: no temporary, no
#     journal, whatever point the kill came at;
#   - a repack with another -o into the folder cleans up too;
#   - a file shaped like a temporary but not in the journal is left alone,
#     and so is the output of a repack that is alive (its journal locked):
#     a second repack of the same output is refused while the first runs,
#     one into another output of the folder leaves the first's files be.
#   killed.sh GGUFMAP GGUFMAP_TESTHOOKS FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$1 hooks=$2 fixture=$3 work=$4
. "$(dirname "$0")/lib.sh"
"$fixture" --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 2 --shards 3 -o "$work/in.gguf" >/dev/null ||
  bad "fixture maker"
in1=$work/in-00001-of-00003.gguf
insum=$(cat "$work"/in-0000*.gguf | sha256sum)
outs=(o-00001-of-00003.gguf o-00002-of-00003.gguf o-00003-of-00003.gguf)

# the folder K holds exactly the whole output, and it verifies
whole_only() {
  local k=$1 what=$2
  [[ $(ls -A "$k" | sort | tr '\n' ' ') == "${outs[*]} " ]] && ok || bad "$what: the folder holds: $(ls -A "$k" | tr '\n' ' ')"
  "$ggufmap" verify "$in1" "$k/${outs[0]}" >/dev/null 2>&1 && ok || bad "$what: the output does not verify"
}
# after a kill: the first shard only with all the others (a reader never
# opens a partial set)
after_kill() {
  local k=$1 what=$2
  if [[ -e $k/${outs[0]} ]]; then
    [[ -e $k/${outs[1]} && -e $k/${outs[2]} ]] && ok || bad "$what: the first shard without the others: $(ls -A "$k")"
  else ok; fi
  [[ $(cat "$work"/in-0000*.gguf | sha256sum) == "$insum" ]] && ok || bad "$what: the input changed"
}
# the same command after a kill: settles, then writes (or finds it whole)
rerun() {
  local k=$1 what=$2 whole=$3
  "$ggufmap" repack "$in1" -o "$k/o.gguf" --order canonical --no-progress >"$k.out" 2>"$k.err"
  local rc=$?
  if (( whole )); then
    [[ $rc == 2 ]] && grep -q 'exists' "$k.err" && ok || bad "$what: rerun on a whole output: exit $rc, $(cat "$k.err")"
    grep -q 'cleaned up after 1 killed repack in this folder: 0 files removed (0 B), 1 whole output kept' "$k.out" && ok ||
      bad "$what: rerun said: $(head -3 "$k.out")"
  else
    [[ $rc == 0 ]] && ok || bad "$what: rerun: exit $rc, $(cat "$k.err")"
    if [[ $what == journal:0 ]]; then want='cleaned up after 1 killed repack in this folder: 0 files removed'
    else want='cleaned up after 1 killed repack in this folder: [1-9][0-9]* files\? removed'; fi
    grep -q "$want" "$k.out" && ok || bad "$what: rerun said: $(head -3 "$k.out")"
  fi
  whole_only "$k" "$what, then the same command"
}

# settled K: K's files go once its checks passed (kept to look at when one
# failed); 21 folders of outputs would otherwise stay to the end
failed_before=0
settled() { (( failed == failed_before )) && rm -rf "$1"; failed_before=$failed; }

points=(journal:0 temp:1 temp:2 temp:3 copied:0 rename:1 rename:2 rename:3 placed:0)
for p in "${points[@]}"; do
  k=$work/k-${p/:/-}; mkdir -p "$k"
  GGUFMAP_REPACK_TEST_KILL_AT=$p "$hooks" repack "$in1" -o "$k/o.gguf" --order canonical --no-progress >/dev/null 2>&1
  rc=$?
  [[ $rc == 137 ]] && ok || bad "$p: the hook did not kill (exit $rc)"
  after_kill "$k" "$p"
  case $p in
    temp:*|copied:*) [[ -n $(ls "$k" | grep 'tmp-') ]] && ok || bad "$p: no temporary to clean up: $(ls -A "$k")" ;;
    rename:1|rename:2) [[ -e $k/${outs[1]} && ! -e $k/${outs[0]} ]] && ok || bad "$p: $(ls -A "$k")" ;;
  esac
  rerun "$k" "$p" "$([[ $p == rename:3 || $p == placed:0 ]] && echo 1 || echo 0)"
  settled "$k"
done

# random moments of a slowed copy
RANDOM=7
for i in $(seq 1 12); do
  k=$work/r$i; mkdir -p "$k"
  GGUFMAP_REPACK_TEST_DELAY_US=3000 "$hooks" repack "$in1" -o "$k/o.gguf" --order canonical --threads 2 --no-progress >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 300)))"
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  after_kill "$k" "random kill #$i"
  "$ggufmap" repack "$in1" -o "$k/o.gguf" --order canonical --no-progress >/dev/null 2>"$k.err"
  rc=$?
  # done before the kill came: the output is whole and the rerun refuses it
  [[ $rc == 0 || ( $rc == 2 && $(grep -c exists "$k.err") == 1 ) ]] && ok || bad "random kill #$i: rerun exit $rc: $(cat "$k.err")"
  whole_only "$k" "random kill #$i, then the same command"
  settled "$k"
done

# another -o into the folder cleans up too; an unrecorded look-alike stays
k=$work/other; mkdir -p "$k"
GGUFMAP_REPACK_TEST_KILL_AT=copied:0 "$hooks" repack "$in1" -o "$k/o.gguf" --order canonical --no-progress >/dev/null 2>&1
printf 'mine' >"$k/o-00002-of-00003.gguf.tmp-abcdef"
"$ggufmap" repack "$in1" -o "$k/p.gguf" --order canonical --no-progress >"$k.out" 2>&1 && ok || bad "another -o: $(cat "$k.out")"
grep -q 'cleaned up after 1 killed repack in this folder: 3 files removed' "$k.out" && ok || bad "another -o said: $(head -2 "$k.out")"
[[ $(ls -A "$k" | sort | tr '\n' ' ') == "o-00002-of-00003.gguf.tmp-abcdef p-00001-of-00003.gguf p-00002-of-00003.gguf p-00003-of-00003.gguf " ]] &&
  ok || bad "another -o left: $(ls -A "$k" | tr '\n' ' ')"
[[ $(cat "$k/o-00002-of-00003.gguf.tmp-abcdef") == mine ]] && ok || bad "the look-alike was changed"

# a live repack's output is not touched; the same output twice is refused
k=$work/live; mkdir -p "$k"
GGUFMAP_REPACK_TEST_DELAY_US=20000 "$hooks" repack "$in1" -o "$k/o.gguf" --order canonical --threads 1 --no-progress >"$k.first" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [[ -n $(ls "$k" | grep tmp-) ]] && break; sleep 0.05; done
"$ggufmap" repack "$in1" -o "$k/o.gguf" --order canonical --no-progress >"$k.second" 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q 'another ggufmap repack is writing this output now' "$k.second" && ok ||
  bad "the same output twice: exit $rc: $(cat "$k.second")"
"$ggufmap" repack "$in1" -o "$k/p.gguf" --order canonical --no-progress >"$k.third" 2>&1 && ok || bad "another output: $(cat "$k.third")"
grep -q 'cleaned up' "$k.third" && bad "the live repack was cleaned up: $(cat "$k.third")" || ok
wait $pid && ok || bad "the live repack failed: $(cat "$k.first")"
[[ $(ls -A "$k" | grep -c '^o-') == 3 && -z $(ls -A "$k" | grep -E 'tmp-|journal') ]] && ok || bad "live: $(ls -A "$k" | tr '\n' ' ')"
"$ggufmap" verify "$in1" "$k/${outs[0]}" >/dev/null 2>&1 && ok || bad "live: the first repack's output does not verify"
summary
