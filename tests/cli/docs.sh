#!/usr/bin/env bash
# --help, the man page, the bash completion and docs/cli.md agree, command by
# command: the same spellings of the same options, every one of which the
# parser accepts; docs/cli.md's usage lines are `ggufmap help --usage CMD`
# word for word; the man page renders without a groff warning.
#   docs.sh GGUFMAP USAGE_DOC WORKDIR     (USAGE_DOC: docs/cli.md)
set -uo pipefail
ggufmap=$(realpath "$1") usage_doc=$2 work=$3
. "$(dirname "$0")/lib.sh"
command -v groff >/dev/null || bad "groff is missing (groff-base, scripts/deps.sh)"

"$ggufmap" help --man >"$work/ggufmap.1" && ok || bad "help --man failed"
"$ggufmap" completion bash >"$work/completion.bash" && ok || bad "completion bash failed"
bash -n "$work/completion.bash" && ok || bad "the completion script is not valid bash"
groff -man -ww -z "$work/ggufmap.1" 2>"$work/groff.err" && [[ ! -s $work/groff.err ]] && ok ||
  bad "groff warns about the man page: $(head -c 300 "$work/groff.err")"

# The commands: top-level help, completion's first word, the man page's synopsis.
commands=$("$ggufmap" help | awk '/^commands:/ {c = 1; next} c && /^  [a-z]/ {print $1} c && /^$/ {exit}' | sort | tr '\n' ' ')
man_cmds=$(grep -E '^\.B ggufmap [a-z]' "$work/ggufmap.1" | awk '{print $3}' | sort | tr '\n' ' ')
comp_cmds=$(bash -c 'source "$1"; COMP_WORDS=(ggufmap ""); COMP_CWORD=1; _ggufmap; printf "%s\n" "${COMPREPLY[@]}"' _ "$work/completion.bash" |
  grep -v '^-' | sort | tr '\n' ' ')
[[ -n $commands && $man_cmds == "$commands" && $comp_cmds == "$commands" ]] && ok ||
  bad "commands: help [$commands] man [$man_cmds] completion [$comp_cmds]"

# spellings_help CMD / spellings_man CMD / spellings_completion CMD: one per line, sorted
spellings_help() {
  "$ggufmap" "$1" --help | grep -E '^  -' | sed -E 's/^  //; s/  .*//; s/, /\n/g' | awk '{print $1}' | sort
}
spellings_man() {
  awk -v cmd="$1" '/^\.S[SH] / {on = ($0 ~ "^\\.SS \"ggufmap " cmd " ")} on && prev == ".TP" && /^\.B / {print} {prev = $0}' \
    "$work/ggufmap.1" | sed -E 's/^\.B //; s/\\-/-/g; s/ \\fI.*//; s/, /\n/g' | awk '{print $1}' | sort
}
spellings_completion() {
  bash -c 'source "$1"; COMP_WORDS=(ggufmap "$2" -); COMP_CWORD=2; _ggufmap; printf "%s\n" "${COMPREPLY[@]}"' _ \
    "$work/completion.bash" "$1" | sort
}

for cmd in ${commands//help/}; do
  [[ $cmd == version || $cmd == completion ]] && continue
  spellings_help "$cmd" >"$work/$cmd.help"
  spellings_man "$cmd" >"$work/$cmd.man"
  spellings_completion "$cmd" >"$work/$cmd.comp"
  [[ $(wc -l <"$work/$cmd.help") -gt 1 ]] && ok || bad "$cmd: no options in --help"
  cmp -s "$work/$cmd.help" "$work/$cmd.man" && ok || bad "$cmd: --help and the man page differ: $(diff "$work/$cmd.help" "$work/$cmd.man" | tr '\n' ' ')"
  cmp -s "$work/$cmd.help" "$work/$cmd.comp" && ok || bad "$cmd: --help and the completion differ: $(diff "$work/$cmd.help" "$work/$cmd.comp" | tr '\n' ' ')"
  # every spelling is one the parser knows
  while read -r opt; do
    "$ggufmap" "$cmd" "$opt" >/dev/null 2>"$work/err" </dev/null
    grep -q "unknown option\|ambiguous" "$work/err" && bad "$cmd $opt: $(cat "$work/err")"
  done <"$work/$cmd.help"
  ok
  # docs/cli.md shows the usage lines as help --usage prints them
  "$ggufmap" help --usage "$cmd" >"$work/$cmd.usage"
  node -e 'const fs = require("fs"); process.exit(fs.readFileSync(process.argv[1], "utf8").includes(fs.readFileSync(process.argv[2], "utf8")) ? 0 : 1)' \
    "$usage_doc" "$work/$cmd.usage" && ok || bad "$cmd: $(basename "$usage_doc")'s usage lines are not 'ggufmap help --usage $cmd':$(printf '\n%s' "$(cat "$work/$cmd.usage")")"
done

# values complete: --device's names, repack's orders
bash -c 'source "$1"; COMP_WORDS=(ggufmap plan m.gguf --device M); COMP_CWORD=4; _ggufmap; echo "${COMPREPLY[*]}"' _ "$work/completion.bash" >"$work/out"
[[ $(cat "$work/out") == "MTL0" ]] && ok || bad "--device M completes to '$(cat "$work/out")'"
bash -c 'source "$1"; COMP_WORDS=(ggufmap repack m.gguf --order ""); COMP_CWORD=4; _ggufmap; echo "${COMPREPLY[*]}"' _ "$work/completion.bash" >"$work/out"
[[ $(cat "$work/out") == "auto canonical moe cpu-last" ]] && ok || bad "--order completes to '$(cat "$work/out")'"

summary
