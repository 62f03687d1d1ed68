#!/usr/bin/env bash
# Build llama.cpp v0.5.0 with the patch series of integrations/llama.cpp and
# the oracle driver against it.
#
# usage: tests/patch/build.sh ORACLE_DIR
#
# ORACLE_DIR is the oracle's directory (tests/oracle/setup.sh made it): its
# llama.git holds the v0.5.0 source tree, hdr/ the headers, npm/ the prebuilt
# libraries.  Into CACHE/KEY, CACHE being $GGUFMAP_PATCH_CACHE or else
# ${XDG_CACHE_HOME:-~/.cache}/ggufmap/patched (outside every build tree, so
# that neither `make clean` nor a second build tree builds it again), this
#   1. extracts the v0.5.0 tree and `git apply`s every patch in order,
#   2. builds the shared library `llama` with llama.cpp's own CMake (a unity
#      build) against the *prebuilt* ggml (tests/patch/ggml/ggml-config.cmake):
#      the same ggml libraries and CPU kernels as the unpatched oracle, so
#      only the loader differs; warnings are errors,
#   3. fills lib/: the patched libllama, and beside it the prebuilt ggml
#      libraries and CPU backends (the oracle loads backends from there),
#   4. compiles, into CACHE/KEY/BIN_KEY/bin, ggufmap-oracle
#      (tests/oracle/oracle.c + fake_gpu.c, the same sources as the unpatched
#      oracle), test-mmap-planner (the series' unit test) and probe.so
#      (tests/patch/probe.c); BIN_KEY hashes those sources, so worktrees whose
#      oracle.c differs each get their own programs beside the one library
#      (never one rebuilding the programs another is running).
# KEY hashes what goes into the library (the patches, this script, the
# llama.cpp commit and the ggml package's version and path, compiler and
# CMake versions), so llama.cpp is built once per patch set: the plain and
# the ASan test passes share it, and so do worktrees with the same series.
# The KEEP (4) most recently used libraries, and programs of each, stay;
# older ones are removed.  The extracted tree and the CMake build tree are
# deleted once lib/ is filled.  Prints CACHE/KEY/BIN_KEY (its bin/ holds the
# programs, its lib the library) on stdout; on failure a message naming the
# step on stderr and exit status 1.  No network.
set -euo pipefail

die() { printf 'patch build: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] && [ -d "$1" ] || die "usage: build.sh ORACLE_DIR (an existing directory)"
ORACLE_DIR=$(cd "$1" && pwd)
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$SCRIPT_DIR/../.." && pwd)
ORACLE_SRC_DIR="$REPO_DIR/tests/oracle"
PATCH_DIR="$REPO_DIR/integrations/llama.cpp/v0.5.0"
LOG=/dev/null
# shellcheck source=tests/oracle/common.sh
. "$ORACLE_SRC_DIR/common.sh"

BINS="$ORACLE_DIR/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
HDR="$ORACLE_DIR/hdr"
GGML_LIB="$BINS/libggml.$LLAMA_RELEASE.so"
for f in "$ORACLE_DIR/llama.git" "$GGML_LIB" "$BINS/libggml-base.so" "$HDR/include/llama.h"; do
    [ -e "$f" ] || die "$f missing: run tests/oracle/setup.sh $ORACLE_DIR first"
done
for tool in git cmake gcc g++ nm flock sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found in PATH"
done
mapfile -t PATCHES < <(find "$PATCH_DIR" -maxdepth 1 -name '*.patch' | sort)
[ "${#PATCHES[@]}" -gt 0 ] || die "no patches in $PATCH_DIR"

# -------------------------------------------------------------- the cache keys
key() { { cat "$@"; printf '%s\n' "$LLAMA_COMMIT" "$NLC_VERSION" "$BINS"; gcc -dumpfullversion; g++ -dumpfullversion;
          cmake --version | head -n 1; } | sha256sum | cut -c1-16; }
LIB_KEY=$(key "${PATCHES[@]}" "${BASH_SOURCE[0]}" "$SCRIPT_DIR/ggml/ggml-config.cmake" "$ORACLE_SRC_DIR/common.sh")
BIN_KEY=$(key "$SCRIPT_DIR/probe.c" "$ORACLE_SRC_DIR/oracle.c" "$ORACLE_SRC_DIR/fake_gpu.c" "$ORACLE_SRC_DIR/fake_gpu.h")
ROOT=${GGUFMAP_PATCH_CACHE:-${XDG_CACHE_HOME:-${HOME:?}/.cache}/ggufmap/patched}
KEEP=4
mkdir -p "$ROOT" || die "cannot create the cache directory $ROOT (set GGUFMAP_PATCH_CACHE)"
ROOT=$(cd "$ROOT" && pwd)
OUT="$ROOT/$LIB_KEY"
PROG="$OUT/$BIN_KEY"
exec 9>"$ROOT/.lock"
flock 9

if [ -f "$PROG/bin/.stamp" ] && [ -f "$OUT/lib/.stamp" ]; then
    touch "$OUT" "$PROG"
    printf '%s\n' "$PROG"
    exit 0
fi
mkdir -p "$OUT"
LOG="$OUT/build.log"
step() { printf '== %s\n' "$*" >>"$LOG"; }

# ------------------------------------------------- 1-3. the patched libllama
build_library() {
    local tmp="$OUT/tmp" p out
    rm -rf "$tmp" "$OUT/lib"
    mkdir -p "$tmp"
    : >"$LOG"
    step "source tree $LLAMA_COMMIT and ${#PATCHES[@]} patches"
    source_tree "$ORACLE_DIR" "$tmp/src"
    # its own repository: inside another one (ORACLE_DIR may lie in a
    # checkout) git apply would take paths relative to that one and skip them
    git init -q "$tmp/src" >>"$LOG" 2>&1 || die "git init $tmp/src failed"
    for p in "${PATCHES[@]}"; do
        out=$(git -C "$tmp/src" apply -v "$p" 2>&1) ||
            die "$(basename "$p") does not apply to llama.cpp $LLAMA_RELEASE: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
        printf '%s\n' "$out" >>"$LOG"
        grep -q '^Applied patch .* cleanly' <<<"$out" || die "$(basename "$p") changed no file"
    done

    step "cmake"
    local flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_FATAL_WARNINGS=ON
                 -DLLAMA_USE_SYSTEM_GGML=ON "-Dggml_DIR=$SCRIPT_DIR/ggml"
                 "-DGGUFMAP_GGML_LIB=$GGML_LIB" "-DGGUFMAP_GGML_BASE_LIB=$BINS/libggml-base.so"
                 "-DGGUFMAP_GGML_INCLUDE=$HDR/ggml/include"
                 -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
                 -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF)
    cmake -S "$tmp/src" -B "$tmp/build" "${flags[@]}" >>"$LOG" 2>&1 ||
        die "cmake configure failed (see $LOG): $(tail -n 3 "$LOG" | tr '\n' ' ')"
    step "build llama"
    nice cmake --build "$tmp/build" --target llama -j"$(nproc)" >>"$LOG" 2>&1 ||
        die "building libllama failed (see $LOG): $(grep -m 3 -E 'error|Error' "$LOG" | tr '\n' ' ')"

    mkdir -p "$tmp/lib"
    cp -a "$tmp/build/bin/"libllama.so* "$tmp/lib/" || die "no libllama.so in $tmp/build/bin"
    for p in "$BINS"/libggml*.so; do
        ln -s "$p" "$tmp/lib/$(basename "$p")"
    done
    # the series' unit test and the patched headers it includes
    mkdir -p "$tmp/lib/tree/src" "$tmp/lib/tree/tests"
    cp "$tmp/src/src/"*.h "$tmp/lib/tree/src/" && cp -r "$tmp/src/include" "$tmp/lib/tree/" &&
        cp "$tmp/src/tests/test-mmap-planner.cpp" "$tmp/lib/tree/tests/" || die "the series has no tests/test-mmap-planner.cpp"
    printf '%s\n' "$LIB_KEY" >"$tmp/lib/.stamp"
    mv "$tmp/lib" "$OUT/lib"
    rm -rf "$tmp"
}
[ -f "$OUT/lib/.stamp" ] || build_library

# ------------------------------------------------------------- 4. programs
build_programs() {
    local cflags=(-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -isystem "$HDR/include" -isystem "$HDR/ggml/include")
    # shellcheck disable=SC2054 # the commas belong to the linker flags
    local link=(-L"$OUT/lib" "-Wl,-rpath,$OUT/lib" -l:libllama.so.0 -l:"libggml.$LLAMA_RELEASE.so" -l:libggml-base.so)
    local bin="$PROG/bin.tmp" exported sym
    LOG="$PROG/build.log"
    rm -rf "$PROG"
    mkdir -p "$bin"
    ln -s ../lib "$PROG/lib"
    step "oracle, unit test, probe"
    gcc "${cflags[@]}" -isystem "$HDR/ggml/src" -I"$ORACLE_SRC_DIR" -o "$bin/ggufmap-oracle" \
        "$ORACLE_SRC_DIR/oracle.c" "$ORACLE_SRC_DIR/fake_gpu.c" "${link[@]}" -rdynamic -ldl >>"$LOG" 2>&1 ||
        die "compiling the oracle against the patched libllama failed (see $LOG)"
    exported=$(nm -D --defined-only "$bin/ggufmap-oracle")
    for sym in ggml_backend_dev_buffer_from_host_ptr ggml_backend_alloc_ctx_tensors_from_buft ggml_backend_tensor_alloc; do
        grep -qw "$sym" <<<"$exported" || die "the patched oracle does not export $sym (need -rdynamic)"
    done
    # the unit test uses libllama's internal classes (exported on Linux)
    g++ -std=c++17 -O1 -g -Wall -Wextra -Werror -I"$OUT/lib/tree/include" -isystem "$HDR/ggml/include" \
        -o "$bin/test-mmap-planner" "$OUT/lib/tree/tests/test-mmap-planner.cpp" "${link[@]}" >>"$LOG" 2>&1 ||
        die "compiling tests/test-mmap-planner.cpp of the series failed (see $LOG)"
    gcc "${cflags[@]}" -shared -fPIC -o "$bin/probe.so" "$SCRIPT_DIR/probe.c" -ldl >>"$LOG" 2>&1 ||
        die "compiling tests/patch/probe.c failed (see $LOG)"
    "$bin/ggufmap-oracle" --list-bufts >>"$LOG" 2>&1 || die "the patched oracle cannot load the CPU backend (see $LOG)"
    printf '%s\n' "$BIN_KEY" >"$bin/.stamp"
    mv "$bin" "$PROG/bin"
}
build_programs

# prune: the KEEP most recently used libraries, and programs in each
# shellcheck disable=SC2012 # the names are our 16-hex-digit keys
prune() {
    local old
    { ls -1dt "$1"/*/ 2>/dev/null | grep -E '/[0-9a-f]{16}/$' || true; } | tail -n +$((KEEP + 1)) |
        while read -r old; do rm -rf "$old"; done
}
touch "$OUT" "$PROG"
prune "$ROOT"
prune "$OUT"
printf '%s\n' "$PROG"
