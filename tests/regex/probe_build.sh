#!/usr/bin/env bash
# probe_build.sh - compiles probe.cpp against one C++ standard library.
#
# usage: probe_build.sh OUT CXX [FLAGS...]
#   e.g. probe_build.sh probe-libcxx clang++ -stdlib=libc++
# The compilers are test dependencies that scripts/deps.sh installs
# (g++-11: the libstdc++ the prebuilt llama.cpp was built with; clang and
# libc++-dev: libc++); a missing one fails the test.
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
"$cxx" -std=c++17 -O1 "$@" -o "$out.tmp" "$here/probe.cpp"
"$out.tmp" /dev/null /dev/null >/dev/null
mv "$out.tmp" "$out"
echo "probe_build.sh: $out ($cxx $*)"
