#!/usr/bin/env bash
# check.sh - our regex engine against a real C++ standard library.
#
# usage: check.sh DRIVER DIALECT PROBE PATTERNS NAMES WORKDIR
#   DRIVER    regex-driver (our engine)
#   DIALECT   libstdc++ or libc++
#   PROBE     probe.cpp compiled against that library (probe_build.sh)
#   PATTERNS  a pattern file (patterns.txt), or random:SEED:COUNT for
#             COUNT patterns that regex-driver --random makes from SEED
#   NAMES     the tensor names (names.txt)
# Both programs answer every pattern: accepted or refused (with the error
# code the library throws), and for an accepted one which names
# std::regex_search finds (or where libc++ gives up with error_complexity),
# or "hang" when the library does not finish: more than our step budget
# (regex-driver --budget) on one name, counted in the same unit on both
# sides for libstdc++ (probe.cpp counts libstdc++'s own _M_dfs calls), so
# that the verdict does not depend on the machine's speed or load; a time
# limit for libc++ (which gives up by itself: no corpus pattern reaches
# it).  Every pattern whose answers differ is printed with both answers
# and our reason; the last line is "N passed, M failed".
set -euo pipefail
# Bytes, not characters: a pattern may hold any byte (a lone 0xc3 would
# swallow the newline after it in a UTF-8 locale).
export LC_ALL=C
if [[ $# -ne 6 ]]; then
  echo "usage: check.sh DRIVER DIALECT PROBE PATTERNS NAMES WORKDIR" >&2
  exit 2
fi
driver=$1 dialect=$2 probe=$3 patterns=$4 names=$5 work=$6
mkdir -p "$work"
if [[ $patterns == random:* ]]; then
  IFS=: read -r _ seed count <<<"$patterns"
  "$driver" --random "$seed" "$count" >"$work/random.txt"
  patterns=$work/random.txt
fi
[[ -x $probe ]] || { echo "check.sh: no probe at $probe (see probe_build.sh)" >&2; exit 1; }

# libstdc++: the step budget decides; the time limit is only a safety net
# (a "timeout" answer is a failure).  libc++: the time limit decides.
if [[ $dialect == libstdc++ ]]; then seconds=${PROBE_SECONDS:-120}; else seconds=${PROBE_SECONDS:-2}; fi
PROBE_STEPS=$("$driver" --budget) PROBE_SECONDS=$seconds "$probe" "$patterns" "$names" >"$work/probe.out"
"$driver" "$dialect" "$patterns" "$names" >"$work/ours.out"
"$driver" --why "$dialect" "$patterns" "$names" >"$work/ours-why.out"

awk -v P="$patterns" -v W="$work/ours-why.out" -v D="$dialect" '
  BEGIN {
    n = 0
    while ((getline l < P) > 0) if (l ~ /^[PX] /) text[n++] = substr(l, 3)
    while ((getline l < W) > 0) { split(l, f, " "); why[f[1]] = l }
  }
  FNR == NR { probe[$1] = substr($0, length($1) + 2); next }
  {
    ours = substr($0, length($1) + 2); seen[$1] = 1
    if (probe[$1] == ours) { pass++; kind[$2]++ } else {
      fail++
      printf "pattern %d: %s\n  %s: %s\n  ours:    %s\n  (%s)\n", $1, text[$1], D, probe[$1], ours, why[$1]
    }
  }
  END {
    for (i = 0; i < n; i++) if (!(i in seen)) { fail++; printf "pattern %d: %s: no answer from us\n", i, text[i] }
    if (n == 0) fail++
    printf "%s: %d patterns: %d accepted, %d refused, %d that do not finish\n", D, n, kind["ok"], kind["reject"], kind["hang"]
    printf "%d passed, %d failed\n", pass, fail
    exit fail > 0
  }' "$work/probe.out" "$work/ours.out"
