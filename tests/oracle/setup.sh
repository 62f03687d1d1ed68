#!/usr/bin/env bash
# Build the llama.cpp oracle for ggufmap.
#
# usage: tests/oracle/setup.sh DIR
#
# Into DIR (created if needed) this
#   1. installs the prebuilt llama.cpp v0.5.0 shared libraries from the npm
#      package @node-llama-cpp/linux-x64@3.22.1 (npm i -E --prefix DIR/npm),
#   2. keeps the llama.cpp source tree from the bundle inside
#      node-llama-cpp@3.22.1 as the bare repository DIR/llama.git (checks
#      release v0.5.0 and the pinned commit; tag v0.5.0) and extracts the
#      matching headers (include/, ggml/include/, ggml/src/ggml-backend-impl.h),
#   3. compiles DIR/bin/ggufmap-oracle (oracle.c + fake_gpu.c),
#      DIR/bin/ggml-read-bench with gcc, and DIR/bin/ggufmap-projection
#      (projection.cpp + fake_gpu.c: llama.cpp's own memory projection,
#      common_get_device_memory_data from libllama-common) with g++.
# Each step leaves a stamp file and is skipped when already done.
# On success the only output is the oracle's path on stdout.
# On failure: a message on stderr naming the failed step, exit status != 0.
# Network: only the npm registry, and only for steps 1 and 2.
set -euo pipefail

BIN_PKG="@node-llama-cpp/linux-x64"

die() { printf 'oracle setup: %s\n' "$*" >&2; exit 1; }

if [ $# -ne 1 ] || [ -z "$1" ]; then die "usage: setup.sh DIR"; fi

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/../.." && pwd)
ORACLE_SRC="$SCRIPT_DIR/oracle.c"
FAKE_GPU_SRC="$SCRIPT_DIR/fake_gpu.c"
FAKE_GPU_HDR="$SCRIPT_DIR/fake_gpu.h"
PROJECTION_SRC="$SCRIPT_DIR/projection.cpp"
BENCH_SRC="$REPO_DIR/bench/ggml_reader/ggml_read_bench.c"

mkdir -p "$1" || die "cannot create directory '$1'"
DIR=$(cd "$1" && pwd)
LOG="$DIR/setup.log"
: >"$LOG" || die "cannot write $LOG"
# shellcheck source=tests/oracle/common.sh
. "$SCRIPT_DIR/common.sh"

# --- prerequisites ----------------------------------------------------------
need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found in PATH ($2)"
}
need node "install nodejs and npm (Debian: apt-get install nodejs npm)"
need npm  "install npm (Debian: apt-get install npm)"
need gcc  "install gcc"
need g++  "install g++ (build-essential)"
need git  "install git (needed to read the llama.cpp source bundle)"
need tar  "install tar"
[ -f "$ORACLE_SRC" ] || die "missing $ORACLE_SRC"
[ -f "$FAKE_GPU_SRC" ] || die "missing $FAKE_GPU_SRC"
[ -f "$FAKE_GPU_HDR" ] || die "missing $FAKE_GPU_HDR"
[ -f "$PROJECTION_SRC" ] || die "missing $PROJECTION_SRC"
[ -f "$BENCH_SRC" ] || die "missing $BENCH_SRC"
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) die "unsupported platform $(uname -s)-$(uname -m): the prebuilt package is linux-x64 only" ;;
esac

# --- 1. prebuilt libraries ----------------------------------------------------
BINS="$DIR/npm/node_modules/$BIN_PKG/bins/linux-x64"
STAMP_NPM="$DIR/.stamp-npm-$NLC_VERSION"
if [ ! -f "$STAMP_NPM" ] || [ ! -f "$BINS/libllama.$LLAMA_RELEASE.so" ]; then
    rm -f "$STAMP_NPM"
    install_prebuilt "$BIN_PKG" "$DIR/npm" "$BINS" ggufmap-oracle-deps
    ls "$BINS"/libggml-cpu-*.so >/dev/null 2>&1 || die "no CPU backend (libggml-cpu-*.so) in $BINS"
    touch "$STAMP_NPM"
fi

# --- 2. source tree and matching headers -------------------------------------
HDR="$DIR/hdr"
install_source "$DIR"
install_headers "$DIR"
# common/fit.h: the declaration of llama.cpp's projection (libllama-common)
HDR_COMMON="$DIR/hdr-common"
if [ ! -f "$HDR_COMMON/common/fit.h" ]; then
    rm -rf "$HDR_COMMON.tmp"
    source_tree "$DIR" "$HDR_COMMON.tmp" common/fit.h
    mv "$HDR_COMMON.tmp" "$HDR_COMMON"
fi

# --- 3. compile ---------------------------------------------------------------
mkdir -p "$DIR/bin"
CFLAGS=(-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
        -isystem "$HDR/include" -isystem "$HDR/ggml/include")
# ggml-backend-impl.h (internal structs of the pinned tree) for the fake GPU
FAKE_CFLAGS=(-isystem "$HDR/ggml/src" -I"$SCRIPT_DIR")
# shellcheck disable=SC2054 # the commas belong to the linker flag
LINK_BASE=(-L"$BINS" "-Wl,-rpath,$BINS")
ORACLE="$DIR/bin/ggufmap-oracle"
BENCH="$DIR/bin/ggml-read-bench"
PROJECTION="$DIR/bin/ggufmap-projection"
build_key=$( { cat "$ORACLE_SRC" "$FAKE_GPU_SRC" "$FAKE_GPU_HDR" "$BENCH_SRC" "$PROJECTION_SRC" "$HDR/ggml/src/ggml-backend-impl.h";
               printf '%s\n' "${CFLAGS[*]}" "${FAKE_CFLAGS[*]}" "$BINS" "$NLC_VERSION"; gcc -dumpfullversion; } |
             sha256sum | cut -d' ' -f1)
STAMP_BUILD="$DIR/.stamp-build"
if [ ! -x "$ORACLE" ] || [ ! -x "$BENCH" ] || [ ! -x "$PROJECTION" ] ||
   [ "$(cat "$STAMP_BUILD" 2>/dev/null || true)" != "$build_key" ]; then
    rm -f "$STAMP_BUILD"
    gcc "${CFLAGS[@]}" "${FAKE_CFLAGS[@]}" -o "$ORACLE.tmp" "$ORACLE_SRC" "$FAKE_GPU_SRC" "${LINK_BASE[@]}" -rdynamic \
        -l:"libllama.$LLAMA_RELEASE.so" -l:"libggml.$LLAMA_RELEASE.so" -l:libggml-base.so -ldl >>"$LOG" 2>&1 ||
        die "compiling $ORACLE_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    gcc "${CFLAGS[@]}" -o "$BENCH.tmp" "$BENCH_SRC" "${LINK_BASE[@]}" -l:libggml-base.so >>"$LOG" 2>&1 ||
        die "compiling $BENCH_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    gcc "${CFLAGS[@]}" "${FAKE_CFLAGS[@]}" -c -o "$DIR/bin/fake_gpu.o" "$FAKE_GPU_SRC" >>"$LOG" 2>&1 ||
        die "compiling $FAKE_GPU_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    g++ -std=c++17 -O2 -g -Wall -Wextra -Werror -isystem "$HDR/include" -isystem "$HDR/ggml/include" \
        -isystem "$HDR_COMMON/common" -I"$SCRIPT_DIR" -o "$PROJECTION.tmp" "$PROJECTION_SRC" "$DIR/bin/fake_gpu.o" \
        "${LINK_BASE[@]}" -l:libllama-common.so -l:"libllama.$LLAMA_RELEASE.so" -l:"libggml.$LLAMA_RELEASE.so" \
        -l:libggml-base.so -ldl >>"$LOG" 2>&1 ||
        die "compiling $PROJECTION_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    mv "$ORACLE.tmp" "$ORACLE"
    mv "$BENCH.tmp" "$BENCH"
    mv "$PROJECTION.tmp" "$PROJECTION"
    # the interposition must actually be in effect: the oracle has to export the hooks
    exported=$(nm -D --defined-only "$ORACLE" 2>>"$LOG") || die "nm failed on $ORACLE (binutils missing?)"
    for sym in ggml_backend_dev_buffer_from_host_ptr ggml_backend_alloc_ctx_tensors_from_buft ggml_backend_tensor_alloc; do
        grep -qw "$sym" <<<"$exported" || die "built oracle does not export $sym (need -rdynamic)"
    done
    "$ORACLE" --list-bufts >>"$LOG" 2>&1 || die "built oracle cannot load the llama.cpp CPU backend (see $LOG)"
    for k in metal cuda; do
        "$ORACLE" --fake-gpu "$k" --list-bufts >>"$LOG" 2>&1 || die "built oracle cannot register its fake $k GPU (see $LOG)"
    done
    printf '%s\n' "$build_key" >"$STAMP_BUILD"
fi

printf '%s\n' "$ORACLE"
