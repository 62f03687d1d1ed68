#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds a consumer outside the
# tree twice: with pkg-config (shared library) and with find_package (static).
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name ggufmap.pc -printf '%h\n' | head -1)
export PKG_CONFIG_PATH=$libdir
gcc -std=c11 -Wall -Werror "$src/main.c" -o "$work/pc-consumer" $(pkg-config --cflags --libs ggufmap) \
    -Wl,-rpath,"$(pkg-config --variable=libdir ggufmap)"
"$work/pc-consumer" | grep -qx "q4_K 256 144"
cmake -S "$src" -B "$work/cm" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
"$work/cm/consumer" | grep -qx "q4_K 256 144"
[[ -x $work/prefix/bin/ggufmap ]] && "$work/prefix/bin/ggufmap" --version
echo "1 passed, 0 failed"
