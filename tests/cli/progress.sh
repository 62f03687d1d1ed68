#!/usr/bin/env bash
# Progress, the same way for hash, verify, repack and load: on a terminal
# (script(1) gives one) a line redrawn in place that ends at 100%; none on a
# terminal with --no-progress or --quiet; none when stderr is a file unless
# --progress, and then whole lines.  The first figures are sane: no "ETA 0s"
# before the end (the time left shows "--" until there is half a second of
# rate).  Colours: on a terminal, not with NO_COLOR, and --color always wins.
#   progress.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$(realpath "$1") fixture=$2 work=$3
. "$(dirname "$0")/lib.sh"
command -v script >/dev/null || { bad "script(1) is missing (bsdutils)"; summary; exit; }

# ~40 MiB of random f32 data: enough work for more than one progress call
"$fixture" --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 4 --seed 7 -o "$work/m.gguf" >/dev/null ||
  bad "fixture maker"
"$fixture" --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 4 --seed 8 -o "$work/n.gguf" >/dev/null ||
  bad "fixture maker"
m=$work/m.gguf n=$work/n.gguf

# on_tty FILE CMD...: runs CMD with a terminal as stdin, stdout and stderr;
# everything it wrote, escapes included, lands in FILE
on_tty() { local f=$1; shift; script -qec "$(printf '%q ' "$@")" /dev/null >"$f" 2>&1 </dev/null; }

i=0
for cmd in "hash $m" "verify $m $n" "repack $m -o $work/r%d.gguf --device metal -ngl 2" "load $m --device metal -ngl 2 --backend host"; do
  i=$((i + 1))
  label=${cmd%% *}
  # shellcheck disable=SC2059
  c=$(printf "$cmd" "$i")
  # a terminal: one line, redrawn, ending at 100%
  # shellcheck disable=SC2086
  on_tty "$work/tty" "$ggufmap" $c
  grep -q $'\r'"$label *\\[" "$work/tty" && ok || bad "$label: no progress redrawn on a terminal: $(head -c 300 "$work/tty" | od -c | head -4)"
  grep -q '100% .*ETA 0s'$'\e\\[K' "$work/tty" && ok || bad "$label: the progress line does not end at 100%"
  # --no-progress and --quiet: none, even on a terminal
  # shellcheck disable=SC2086
  on_tty "$work/tty" "$ggufmap" ${c/r$i.gguf/s$i.gguf} --no-progress
  grep -q $'\r'"$label *\\[" "$work/tty" && bad "$label --no-progress drew progress" || ok
  # shellcheck disable=SC2086
  on_tty "$work/tty" "$ggufmap" ${c/r$i.gguf/q$i.gguf} --quiet
  grep -q "$label *\\[" "$work/tty" && bad "$label --quiet drew progress" || ok
  # stderr a file: nothing unless --progress, then lines
  # shellcheck disable=SC2086
  "$ggufmap" ${c/r$i.gguf/f$i.gguf} >/dev/null 2>"$work/err"
  grep -q "$label *\\[" "$work/err" && bad "$label drew progress into a file" || ok
  # shellcheck disable=SC2086
  "$ggufmap" ${c/r$i.gguf/p$i.gguf} --progress >/dev/null 2>"$work/err"
  grep -q "^$label *\\[.*\\] .* / .* 100% .*/s ETA 0s$" "$work/err" && ok || bad "$label --progress: $(tail -c 300 "$work/err")"
  grep -v ' 100% ' "$work/err" | grep -q 'ETA 0s' && bad "$label: 'ETA 0s' before the end: $(head -c 300 "$work/err")" || ok
  grep -q $'\r' "$work/err" && bad "$label --progress into a file redraws" || ok
  head -n 1 "$work/err" | grep -qE 'ETA (--|[0-9]+s|[0-9]+m[0-9]+s)$' && ok || bad "$label: first line $(head -n 1 "$work/err")"
done

# ---- colour: a terminal gets it, NO_COLOR and TERM=dumb do not, --color always wins
"$fixture" --arch llama --layers 4 --type f32 --move output.weight:first -o "$work/of.gguf" >/dev/null
on_tty "$work/tty" env TERM=xterm "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1
grep -q $'\e\\[3[0-9]m' "$work/tty" && ok || bad "no colour on a terminal"
on_tty "$work/tty" env TERM=xterm NO_COLOR=1 "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1
grep -q $'\e\\[3[0-9]m' "$work/tty" && bad "colour despite NO_COLOR" || ok
on_tty "$work/tty" env TERM=dumb "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1
grep -q $'\e\\[3[0-9]m' "$work/tty" && bad "colour on a dumb terminal" || ok
NO_COLOR=1 "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1 --color always >"$work/out"
grep -q $'\e\\[3[0-9]m' "$work/out" && ok || bad "--color always lost to NO_COLOR"

summary
