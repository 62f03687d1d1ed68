#!/usr/bin/env bash
# seeds.sh GGUFMAP FIXTURE OUTDIR - the fuzz harness's seed corpus: the
# header (up to the tensor data) of every architecture ggufmap-fixture
# makes and of every hostile model of tests/hostile/cases.txt (the issue 20
# reproducers among them).  Deterministic: the fixtures depend on --seed only.
set -uo pipefail
export LC_ALL=C
[ $# -eq 3 ] || { echo "usage: seeds.sh GGUFMAP FIXTURE OUTDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 OUT=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1
tmp=$OUT/.tmp.gguf
n=0
# header NAME ARGS...: NAME's header into OUT
header() {
  local name=$1 off
  shift
  rm -f "$tmp"
  "$FIXTURE" "$@" -o "$tmp" >/dev/null 2>&1 || { echo "seeds.sh: ggufmap-fixture $* failed" >&2; exit 1; }
  off=$("$GGUFMAP" inspect --json "$tmp" | sed -n 's/^ *"data_offset": \([0-9]*\),*$/\1/p' | head -n 1)
  [ -n "$off" ] || { echo "seeds.sh: no data offset for $name" >&2; exit 1; }
  head -c "$off" "$tmp" >"$OUT/$name.gguf"
  n=$((n + 1))
}
while read -r a _; do header "arch-$a" --arch "$a"; done < <("$FIXTURE" --list-archs | awk 'NR > 1')
while read -r name args; do
  case $name in ''|'#'*) continue ;; esac
  # shellcheck disable=SC2086
  header "hostile-$name" $args
done <"$HERE/../hostile/cases.txt"
rm -f "$tmp"
echo "seeds.sh: $n headers in $OUT"
