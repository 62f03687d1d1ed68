#!/usr/bin/env bash
# hostile.sh GGUFMAP FIXTURE ORACLE WORKDIR [NAME_REGEX] - the hostile
# hyperparameter set (tests/hostile/cases.txt; the cases whose name matches
# NAME_REGEX) gives llama.cpp's answer.
#
# Each line of CASES makes one model with ggufmap-fixture (an architecture's
# fixture, then --set/--unset/--shape edits).  The real llama.cpp v0.5.0
# (the oracle) loads it and creates a context (-c 512; embeddings on for
# the pooled encoders), and decides:
#   - it refuses or aborts loading the model (or crashes): ggufmap plan and
#     fit, on the CPU, a fake Metal and a fake CUDA device (-ngl all), exit 2
#     and print llama.cpp's reason (its error message, or the assertion and
#     its file:line; "crashes" for a signal);
#   - it loads the model but the context fails: fit exits 2 or 3 with the
#     reason; plan either refuses with it (the failure does not depend on
#     the context's options) or prints the oracle's buffers;
#   - it loads and creates the context: plan prints the oracle's buffers and
#     fit its context (tests/fit/lib.sh's comparison: KV, state and output
#     to the byte, compute exact or a bound never below) on all three.
# No expected answer is written anywhere: the oracle gives each one.
# Prints one line per case and a summary; exit status 1 on any difference.
set -uo pipefail
export LC_ALL=C
[ $# -ge 4 ] || { echo "usage: hostile.sh GGUFMAP FIXTURE ORACLE WORKDIR [NAME_REGEX]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4 ONLY=${5:-.}
HOSTILE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASES=$HOSTILE/cases.txt
HERE=$HOSTILE/../fit # lib.sh's fit_lines.js
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

DEVICES=("cpu" "metal" "cuda")
dev_args() { [ "$1" = cpu ] && return; printf '%s\n' --device "$1" -ngl all; }
pooled() { case $1 in bert|nomic-bert|t5encoder) echo --embedding ;; esac; }

n_load=0 n_context=0 n_ok=0 n_bad=0
bad() { fails+=("$1"); n_bad=$((n_bad + 1)); }

# the reason llama.cpp gave, from the oracle's output: "TEXT|FILE:LINE" for
# an abort, the error message without llama.cpp's prefixes for a refusal
oracle_reason() {
  awk '
    $1 == "ABORT" { sub(/^ABORT /, ""); i = index($0, ": "); print substr($0, i + 2) "|" substr($0, 1, i - 1); exit }
    $1 == "RESULT" && $2 == "crash" { print "crashes|"; exit }
    /^ERR llama_model_load: error loading model: / { sub(/^ERR llama_model_load: error loading model: /, "")
      sub(/^error loading model (hyperparameters|architecture|vocabulary): /, ""); print $0 "|"; exit }
    /^CTXLOG ERROR llama_init_from_model: failed to initialize the context: / {
      sub(/^CTXLOG ERROR llama_init_from_model: failed to initialize the context: /, ""); print $0 "|"; exit }'
}

# says FILE REASON: FILE holds every part of REASON ("TEXT|FILE:LINE")
says() { local text=${2%%|*} where=${2#*|}; grep -qF -- "$text" "$1" && { [ -z "$where" ] || grep -qF -- "$where" "$1"; }; }

# refuses WHAT RC_OK OUT REASON CMD...: CMD exits with a status in RC_OK and prints REASON
refuses() {
  local what=$1 ok=$2 out=$3 reason=$4 rc
  shift 4
  "$@" >"$out" 2>&1; rc=$?
  if [[ " $ok " != *" $rc "* ]] || ! says "$out" "$reason"; then
    bad "$what: exit $rc (want $ok) and llama.cpp's reason '${reason%%|*}' ${reason#*|}; it said: $(head -c 400 "$out")"
    return 1
  fi
}

# same_buffers WHAT MODEL DEVICE: plan's buffers are the oracle's
same_buffers() {
  local what=$1 model=$2 dev=$3 d rc oargs=()
  d=$(mktemp -d "$WORK/plan.XXXXXX")
  [ "$dev" = cpu ] || oargs=(--fake-gpu "$dev" --ngl all)
  "$ORACLE" --no-repack "${oargs[@]}" "$model" >"$d/o.out" 2>&1
  # shellcheck disable=SC2046
  "$GGUFMAP" plan "$model" --format buffers -nr $(dev_args "$dev") >"$d/p.out" 2>&1; rc=$?
  grep -E '^(MAPPED|ALLOC) ' "$d/o.out" >"$d/o.lines"
  grep -E '^(MAPPED|ALLOC) ' "$d/p.out" >"$d/p.lines"
  if [ $rc -ne 0 ] || ! [ -s "$d/o.lines" ] || ! cmp -s "$d/o.lines" "$d/p.lines"; then
    bad "$what: plan exit $rc, buffers differ from llama.cpp's: $(diff "$d/o.lines" "$d/p.lines" | head -4 | tr '\n' ' ')"
    return 1
  fi
  rm -rf "$d"
}

# one NAME ARGS...: one hostile model through the oracle and ggufmap
one() {
  local name=$1 arch="" a prev="" dir="$WORK/$1" reason dev kind
  shift
  for a in "$@"; do [ "$prev" = --arch ] && arch=$a; prev=$a; done
  mkdir -p "$dir"
  if ! "$FIXTURE" "$@" -o "$WORK/$name.gguf" >"$dir/fixture.out" 2>&1; then
    bad "$name: ggufmap-fixture $*: $(head -c 300 "$dir/fixture.out")"; return
  fi
  local model="$WORK/$name.gguf" emb
  emb=$(pooled "$arch")
  local oemb=()
  [ -n "$emb" ] && oemb=(--embd)
  "$ORACLE" --no-repack --ctx 512 "${oemb[@]}" "$model" >"$dir/oracle.out" 2>&1
  reason=$(oracle_reason <"$dir/oracle.out")
  if ! grep -q '^MODEL ' "$dir/oracle.out"; then
    kind=load n_load=$((n_load + 1))
    [ -n "$reason" ] || { bad "$name: the oracle neither loaded it nor said why"; return; }
    for dev in "${DEVICES[@]}"; do
      # shellcheck disable=SC2046
      refuses "$name plan $dev" 2 "$dir/plan-$dev" "$reason" "$GGUFMAP" plan "$model" -nr $(dev_args "$dev") || break
      # shellcheck disable=SC2046
      refuses "$name fit $dev" 2 "$dir/fit-$dev" "$reason" "$GGUFMAP" fit "$model" -c 512 -nr $emb $(dev_args "$dev") ||
        break
    done
  elif [ -n "$reason" ]; then
    kind=context n_context=$((n_context + 1))
    for dev in "${DEVICES[@]}"; do
      # shellcheck disable=SC2046
      refuses "$name fit $dev" "2 3" "$dir/fit-$dev" "$reason" "$GGUFMAP" fit "$model" -c 512 -nr $emb $(dev_args "$dev") ||
        break
      # shellcheck disable=SC2046
      if "$GGUFMAP" plan "$model" -nr $(dev_args "$dev") >"$dir/plan-$dev" 2>&1; then
        same_buffers "$name plan $dev" "$model" "$dev" || break
      else
        # shellcheck disable=SC2046
        refuses "$name plan $dev" 2 "$dir/plan-$dev" "$reason" "$GGUFMAP" plan "$model" -nr $(dev_args "$dev") || break
      fi
    done
  else
    kind=ok n_ok=$((n_ok + 1))
    local before=$n_fail
    for dev in "${DEVICES[@]}"; do
      same_buffers "$name plan $dev" "$model" "$dev" || break
      # shellcheck disable=SC2046
      check "$name fit $dev" "$name" -c 512 $emb $(dev_args "$dev")
      [ "$n_fail" -eq "$before" ] || { n_bad=$((n_bad + 1)); break; }
    done
  fi
  printf '%-28s %-8s %s\n' "$name" "$kind" "${reason:-loads; same figures on cpu, metal, cuda}"
}

while read -r name args; do
  case $name in ''|'#'*) continue ;; esac
  [[ $name =~ $ONLY ]] || continue
  # shellcheck disable=SC2086
  one "$name" $args
done <"$CASES"

total=$((n_load + n_context + n_ok))
for f in "${fails[@]}"; do printf 'FAIL: %s\n' "$f"; done
echo "hostile: $total models: llama.cpp refuses $n_load at load, $n_context at context creation, loads $n_ok;" \
     "$((total - n_bad)) answered as llama.cpp does, $n_bad not"
[ "$n_bad" -eq 0 ] && [ "$total" -gt 0 ]
