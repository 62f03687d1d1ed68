#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds a consumer outside the
# tree three ways: with pkg-config (shared library), and with find_package
# through ggufmap::ggufmap (shared) and ggufmap::ggufmap_static.  The prefix
# holds the man page and the bash completion, equal to what the binary
# generates; `make install PREFIX=DIR` installs into DIR.
#   check.sh BUILD CONSUMER_DIR WORKDIR
set -uo pipefail
build=$1 src=$2 work=$3
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null && ok || bad "cmake --install"
# what the consumer prints: q4_K's sizes, Metal's defaults, SHA-256 of nothing
want=$'q4_K 256 144\nmetal arm64 16384 tight:0:64\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
libdir=$(find "$work/prefix" -name ggufmap.pc -printf '%h\n' | head -1)
export PKG_CONFIG_PATH=$libdir
gcc -std=c11 -Wall -Werror "$src/main.c" -o "$work/pc-consumer" $(pkg-config --cflags --libs ggufmap) \
    -Wl,-rpath,"$(pkg-config --variable=libdir ggufmap)" && ok || bad "pkg-config consumer does not build"
[[ $("$work/pc-consumer") == "$want" ]] && ok || bad "pkg-config consumer prints $("$work/pc-consumer")"
for target in ggufmap::ggufmap ggufmap::ggufmap_static; do
  d=$work/cm-${target#ggufmap::}
  cmake -S "$src" -B "$d" -DCMAKE_PREFIX_PATH="$work/prefix" -DGGUFMAP_TARGET="$target" \
        -DCMAKE_BUILD_RPATH="$(pkg-config --variable=libdir ggufmap)" >/dev/null && cmake --build "$d" >/dev/null &&
    ok || bad "find_package consumer with $target does not build"
  [[ $("$d/consumer") == "$want" ]] && ok || bad "$target consumer prints $("$d/consumer")"
done
[[ -x $work/prefix/bin/ggufmap ]] && "$work/prefix/bin/ggufmap" --version >/dev/null && ok || bad "no ggufmap installed"
# libcurl is loaded when a URL is given, not at every start (issue 21): the
# tool and the library do not need it, yet the library can load it
so=$(find "$work/prefix" -name 'libggufmap.so*' -type f | head -1)
for f in "$work/prefix/bin/ggufmap" "$so"; do
  needs=$(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }' | tr '\n' ' ')
  [[ -n $needs && $needs != *curl* ]] && ok || bad "$(basename "$f") needs libcurl at start-up: $needs"
done
undefined=$(nm -D --undefined-only "$so" | awk '{ print $NF }') # not piped into grep -q: pipefail and SIGPIPE
grep -q '^dlopen\(@\|$\)' <<<"$undefined" && ok || bad "the installed library cannot load libcurl (no dlopen)"
man=$(find "$work/prefix" -path '*/man1/ggufmap.1')
comp=$(find "$work/prefix" -path '*/bash-completion/completions/ggufmap')
[[ -n $man ]] && cmp -s "$man" <("$work/prefix/bin/ggufmap" help --man) && ok || bad "man page not installed or stale: '$man'"
[[ -n $comp ]] && cmp -s "$comp" <("$work/prefix/bin/ggufmap" completion bash) && ok || bad "completion not installed or stale: '$comp'"
# make install PREFIX=DIR installs into DIR: run for real, with the build
# itself taken as done (-o build: this tree is built, and a test must not
# reconfigure the tree the other tests run from)
root=$(cd "$(dirname "$0")/../.." && pwd)
make -s -C "$root" -o build install BUILD="$build" PREFIX="$work/mk" >"$work/mk.log" 2>&1 && ok ||
  bad "make install PREFIX=$work/mk failed: $(tail -3 "$work/mk.log")"
for f in bin/ggufmap include/ggufmap/ggufmap.h; do
  [[ -e $work/mk/$f ]] && ok || bad "make install PREFIX= did not install $f under the prefix"
done
[[ -n $(find "$work/mk" -name ggufmapConfig.cmake) && -n $(find "$work/mk" -name 'libggufmap.so*') ]] && ok ||
  bad "make install PREFIX= did not install the library and its CMake package: $(cd "$work/mk" && find . | head -20)"
# make build and make install ask deps.sh for what building needs only (not
# the tests' node, qemu or cross compilers); make test asks for the tests' too
recipe() { make -s -n -C "$root" "$1" BUILD="$build" 2>/dev/null | grep -o 'deps\.sh [a-z]*' | sort -u | tr '\n' ' '; }
for target in build install demo; do
  [[ $(recipe $target) == "deps.sh build " ]] && ok || bad "make $target runs: $(recipe $target)(expected deps.sh build only)"
done
[[ $(recipe test) == *"deps.sh test"* ]] && ok || bad "make test runs: $(recipe test)(expected deps.sh test)"
echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
