#!/usr/bin/env bash
# An input that changes while hash, verify or repack reads it (issue 20,
# item 3) is an error, exit 2, never a digest or a copy of two files mixed.
# Deterministic, not a race: the test build's hook GGUFMAP_TEST_INPUT_CHANGE
# (internal.h) changes the input (GGUFMAP_TEST_INPUT_FILE) right after a
# piece of it is read:
#   truncate:N      the file shrinks to N bytes (size; what a download being
#                   restarted or `truncate -s` does);
#   write:OFFSET    one byte rewritten in place, the size kept (modification
#                   time; the file's mtime is set in the past first, so that
#                   the write's own time differs whatever the clock's grain);
#   replace:OTHER   another file renamed onto the path (inode).
# For each: exit 2, a message that names the file and what changed, no
# output under the destination names, no temporary left.  Without the hook
# the same commands succeed (the hook is what fails them).  The shrink is
# tried at 4 sizes: inside the tensor data, inside the header (which is
# mapped: nothing may touch it again once the file shrank), at its end, and
# one byte short; hash in both its ways (--digest-only: the
# tensors by several threads; plain and --json: one stream), verify (the
# sparse digest) and repack.
#   changing.sh GGUFMAP_TESTHOOKS FIXTURE_MAKER WORKDIR
set -uo pipefail
hooks=$1 fixture=$2 work=$3 ggufmap=$1
. "$(dirname "$0")/lib.sh"
"$fixture" --arch llama --type f32 --n-embd 512 --n-ff 2048 --vocab 8192 --layers 2 -o "$work/m.gguf" >/dev/null ||
  bad "fixture maker"
size=$(stat -c %s "$work/m.gguf")
data_at=$("$hooks" inspect --json "$work/m.gguf" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).shards[0].data_offset))')
(( size > 16 * 1024 * 1024 && data_at > 0 )) && ok || bad "fixture: $size bytes, data at $data_at"

# fresh COPY of the model, its mtime in the past
fresh() { rm -f "$work/in.gguf" "$work/other.gguf"; cp "$work/m.gguf" "$work/in.gguf"; touch -d '2020-01-01 00:00' "$work/in.gguf"; }
# expect_change WHAT WANT_IN_MESSAGE CMD...: exit 2, the message, nothing left
expect_change() {
  local what=$1 want=$2
  shift 2
  rm -rf "$work/out"* && mkdir -p "$work/out"
  GGUFMAP_TEST_INPUT_CHANGE=$what GGUFMAP_TEST_INPUT_FILE=$work/in.gguf "$@" >"$work/stdout" 2>"$work/err"
  local rc=$?
  [[ $rc == 2 ]] && ok || bad "$what: $*: exit $rc, want 2 ($(head -c 300 "$work/err"))"
  grep -q "in.gguf: changed while being read: $want" "$work/err" && ok ||
    bad "$what: $*: message: $(head -c 300 "$work/err")"
  [[ -z $(ls -A "$work/out") ]] && ok || bad "$what: $*: left $(ls -A "$work/out")"
  grep -q '^digest\|^sha256' "$work/stdout" && bad "$what: $*: printed a digest: $(head -2 "$work/stdout")" || ok
}

cases=("truncate:$((size / 2))|its size went from $size to $((size / 2)) bytes"
       "truncate:100|its size went from $size to 100 bytes"
       "truncate:$data_at|its size went from $size to $data_at bytes"
       "truncate:$((size - 1))|its size went from $size to $((size - 1)) bytes"
       "write:$((size - 4096))|it was written to (modification time)"
       "write:$((data_at + 8))|it was written to (modification time)"
       "replace:$work/other.gguf|the path names another file now (replaced)")
for c in "${cases[@]}"; do
  what=${c%%|*} want=${c#*|}
  for cmd in "hash --digest-only" "hash" "hash --json" "verify" "repack"; do
    fresh
    [[ $what == replace:* ]] && cp "$work/m.gguf" "$work/other.gguf"
    case $cmd in
      verify) expect_change "$what" "$want" "$hooks" verify "$work/m.gguf" "$work/in.gguf" ;;
      repack) expect_change "$what" "$want" "$hooks" repack "$work/in.gguf" -o "$work/out/r.gguf" --order canonical --no-progress ;;
      *) read -r -a argv <<<"$cmd"; expect_change "$what" "$want" "$hooks" "${argv[@]}" "$work/in.gguf" ;;
    esac
  done
done

# without the hook the same commands succeed: the hook is what fails them
fresh
"$hooks" hash --digest-only "$work/in.gguf" >/dev/null && ok || bad "hash without the hook"
"$hooks" verify "$work/m.gguf" "$work/in.gguf" >/dev/null && ok || bad "verify without the hook"
rm -rf "$work/out" && mkdir -p "$work/out"
"$hooks" repack "$work/in.gguf" -o "$work/out/r.gguf" --order canonical --no-progress >/dev/null 2>"$work/err" && ok ||
  bad "repack without the hook: $(cat "$work/err")"
summary
