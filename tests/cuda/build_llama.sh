#!/usr/bin/env bash
# Build llama.cpp v0.5.0 from a source tarball and the ggufmap oracle against
# it: what the device machine runs first (tests/cuda/device.sh), and what
# this machine runs CPU-only to check the same steps (docs/cuda.md).
#
# usage: build_llama.sh SRC.tar.gz ORACLE_SRC_DIR BUILD_DIR cuda|cpu [JOBS]
#
#   SRC.tar.gz      the subset of llama.cpp's tree pack.sh writes (git archive
#                   of the pinned commit: CMake files, include/, src/, vendor/,
#                   ggml/ with the CPU and CUDA backends only)
#   ORACLE_SRC_DIR  a folder with oracle.c, fake_gpu.c, fake_gpu.h
#                   (tests/oracle of this repository)
#   BUILD_DIR       created; gets src/ (the tree), build/ (CMake, ninja) and
#                   bin/ggufmap-oracle
#   cuda|cpu        cuda: GGML_CUDA for sm_90 only (CMAKE_CUDA_ARCHITECTURES
#                   90-real: the H200), everything else llama.cpp's default
#
# libllama and ggml are shared libraries (the oracle interposes
# ggml-base's functions through the PLT, as with the prebuilt ones; see
# tests/oracle/README.md); only the `llama` target is built (ggml, ggml-base,
# ggml-cpu and ggml-cuda come with it): no common, tools, tests or server.
# libllama's model sources are a unity build (src/CMakeLists.txt does so).
# Prints one line per step with its seconds; exit status 1 on failure with
# the last lines of the failed step's log.
set -euo pipefail

[ $# -ge 4 ] || { echo "usage: build_llama.sh SRC.tar.gz ORACLE_SRC_DIR BUILD_DIR cuda|cpu [JOBS]" >&2; exit 2; }
TAR=$1 ORACLE_SRC=$2 DIR=$3 KIND=$4 JOBS=${5:-$(nproc)}
case $KIND in cuda|cpu) ;; *) echo "build_llama.sh: kind must be cuda or cpu, not '$KIND'" >&2; exit 2 ;; esac
for f in oracle.c fake_gpu.c fake_gpu.h; do
  [ -f "$ORACLE_SRC/$f" ] || { echo "build_llama.sh: missing $ORACLE_SRC/$f" >&2; exit 2; }
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
LOG=$DIR/build.log
: >"$LOG"
t0=$(date +%s)
step() { echo "build: $1 done in $(( $(date +%s) - t0 )) s"; }
fail() { echo "build: $1 failed; last lines of $LOG:" >&2; tail -n 30 "$LOG" >&2; exit 1; }

rm -rf "$DIR/src" && mkdir -p "$DIR/src"
tar -xzf "$TAR" -C "$DIR/src" || fail "unpacking $TAR"
step unpack

# the device image has cmake and ninja in its Python environment
for d in /usr/local/cuda/bin /opt/torch/.venv/bin; do
  [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH=$PATH:$d ;; esac
done
export PATH
GEN=Ninja
command -v ninja >/dev/null || GEN="Unix Makefiles"
CMAKE_ARGS=(-G "$GEN" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
            -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF
            -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF
            -DLLAMA_OPENSSL=OFF)
if [ "$KIND" = cuda ]; then
  # sm_90 only; NCCL is for several GPUs and is not on the device image
  CMAKE_ARGS+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real -DGGML_CUDA_NCCL=OFF)
fi
cmake -S "$DIR/src" -B "$DIR/build" "${CMAKE_ARGS[@]}" >>"$LOG" 2>&1 || fail "cmake configure"
step "configure ($GEN, $(cmake --version | head -n 1))"
cmake --build "$DIR/build" --target llama -j "$JOBS" >>"$LOG" 2>&1 || fail "cmake --build"
step "build of libllama ($KIND)"

LIBS=$DIR/build/bin
[ -f "$LIBS/libllama.so" ] || fail "finding $LIBS/libllama.so"
mkdir -p "$DIR/bin"
SRC=$DIR/src
gcc -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
    -isystem "$SRC/include" -isystem "$SRC/ggml/include" -isystem "$SRC/ggml/src" -I"$ORACLE_SRC" \
    -o "$DIR/bin/ggufmap-oracle" "$ORACLE_SRC/oracle.c" "$ORACLE_SRC/fake_gpu.c" \
    -L"$LIBS" "-Wl,-rpath,$LIBS" -rdynamic -lllama -lggml -lggml-base -ldl >>"$LOG" 2>&1 ||
  fail "compiling the oracle"
# the backends are linked in (no GGML_BACKEND_DL): an empty directory keeps
# the oracle's ggml_backend_load_all_from_path from dlopen-ing them twice
mkdir -p "$DIR/no-dl-backends"
GGUFMAP_ORACLE_BACKEND_DIR=$DIR/no-dl-backends "$DIR/bin/ggufmap-oracle" --list-bufts >"$DIR/bufts.txt" 2>>"$LOG" ||
  fail "ggufmap-oracle --list-bufts"
step "oracle (buffer types: $(tr '\n' ' ' <"$DIR/bufts.txt"))"
