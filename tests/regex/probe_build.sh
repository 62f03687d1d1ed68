#!/usr/bin/env bash
# probe_build.sh - compiles probe.cpp against one C++ standard library.
#
# usage: probe_build.sh OUT CXX [FLAGS...]
#   e.g. probe_build.sh probe-libcxx clang++ -stdlib=libc++
# The compilers are test dependencies that scripts/deps.sh installs
# (g++-11: the libstdc++ the prebuilt llama.cpp was built with; clang and
# libc++-dev: libc++); a missing one fails the test.
# A g++ probe (libstdc++) counts its search steps (probe.cpp: calls of
# _M_dfs, through -finstrument-functions and dladdr), so that "does not
# finish" means more than PROBE_STEPS steps, as in our engine, whatever
# the machine's speed.  Only what runs per step needs the hook: the other
# headers' functions (std::function, vectors, strings, the matchers) are
# left uninstrumented, which makes the probe ~8x faster (a header left
# out of the list costs time, not correctness; regex_executor.tcc, where
# _M_dfs lives, must stay in: the self-check below fails otherwise).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: probe_build.sh OUT CXX [FLAGS...]" >&2
  exit 2
fi
out=$1 cxx=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "probe_build.sh: $cxx not found: run scripts/deps.sh (it installs g++-11, clang, libc++-dev)" >&2
  exit 1
fi
count=()
if [[ $("$cxx" --version | head -1) != *clang* && " $* " != *" -stdlib=libc++ "* ]]; then
  skip=bits/std_function,bits/stl_,bits/regex_compiler,bits/regex.h,bits/regex_automaton,bits/regex_scanner
  skip+=,bits/regex_executor.h,bits/basic_string,bits/char_traits,bits/move.h,bits/invoke,bits/predefined_ops
  skip+=,bits/alloc_traits,bits/new_allocator,ext/,bits/shared_ptr,bits/locale,bits/unique_ptr,corpus_text.h
  count=(-DPROBE_COUNT_STEPS -finstrument-functions -finstrument-functions-exclude-file-list=$skip -rdynamic)
fi
"$cxx" -std=c++17 -O1 "${count[@]}" "$@" -o "$out.tmp" "$here/probe.cpp" -ldl
"$out.tmp" /dev/null /dev/null >/dev/null
if (( ${#count[@]} )); then
  # the count must work: a pattern that needs more steps than allowed is a
  # hang, the same one with room is answered
  printf 'P (a*)*b\n' >"$out.p" && printf 'N aaaaaaaaaaaa\n' >"$out.n"
  [[ $(PROBE_STEPS=1000 "$out.tmp" "$out.p" "$out.n") == "0 hang" ]] ||
    { echo "probe_build.sh: the step count does not stop (a*)*b at 1000 steps" >&2; exit 1; }
  [[ $(PROBE_STEPS=100000000 "$out.tmp" "$out.p" "$out.n") == "0 ok 0" ]] ||
    { echo "probe_build.sh: the step count stops (a*)*b short of 1e8 steps" >&2; exit 1; }
  rm -f "$out.p" "$out.n"
fi
mv "$out.tmp" "$out"
echo "probe_build.sh: $out ($cxx $* ${count[*]})"
