#!/usr/bin/env bash
# Pack what the device machine needs for the real-CUDA run into one folder
# (docs/cuda.md): the device tool sends a repository's working tree plus
# the ignored folders a call names, nothing else, and the device has no
# network.
#
# usage: pack.sh [--only-missing RESULTS] BUILD_DIR DEST [LLAMA_GIT_DIR]
#
#   --only-missing RESULTS  leave out the cases RESULTS (a results.txt)
#                  already holds (not those it marks SKIPPED): a second run
#
#   BUILD_DIR      this repository's build tree (make build): its
#                  ggufmap-fixture objects and libggufmap.a
#   DEST           created (must not exist); gets
#                    llama-src.tar.gz   llama.cpp at the pinned commit, the
#                                       files build_llama.sh needs (~2 MB)
#                    oracle/            tests/oracle's oracle.c, fake_gpu.[ch]
#                    ggufmap-fixture    the fixture maker, linked statically
#                    fixtures.tsv       NAME<TAB>MAKER ARGS (cases.sh fixtures)
#                    fixtures.sha256    what those files hash to, made here
#                                       by the build's own maker
#                    cases.tsv          NAME<TAB>FIXTURE<TAB>ENV<TAB>FIT ARGS
#                                       <TAB>ORACLE ARGS (cases.sh cases)
#                    graphs.txt         cases whose scheduler graphs are kept
#                    *.sh               build_llama.sh, device.sh, run_case.sh
#   LLAMA_GIT_DIR  a git repository holding the pinned commit (default: the
#                  oracle's, $GGUFMAP_ORACLE_DIR/llama.git, else
#                  /work/llama-src)
set -euo pipefail

DONE=""
if [ "${1:-}" = --only-missing ]; then DONE=$2; shift 2; fi
[ $# -ge 2 ] || { echo "usage: pack.sh [--only-missing RESULTS] BUILD_DIR DEST [LLAMA_GIT_DIR]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd) DEST=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
LLAMA_COMMIT=$(sed -n 's/^LLAMA_COMMIT=//p' "$REPO/tests/oracle/common.sh")
GIT=${3:-}
if [ -z "$GIT" ]; then
  if [ -n "${GGUFMAP_ORACLE_DIR:-}" ] && [ -d "$GGUFMAP_ORACLE_DIR/llama.git" ]; then GIT=$GGUFMAP_ORACLE_DIR/llama.git
  else GIT=/work/llama-src; fi
fi
[ ! -e "$DEST" ] || { echo "pack.sh: $DEST exists" >&2; exit 1; }
FX_OBJ=$BUILD/tools/fixture/CMakeFiles/ggufmap-fixture.dir
FIXTURE=$BUILD/tools/fixture/ggufmap-fixture
[ -x "$FIXTURE" ] && [ -d "$FX_OBJ" ] && [ -f "$BUILD/src/libggufmap.a" ] ||
  { echo "pack.sh: $BUILD has no built ggufmap-fixture (make build)" >&2; exit 1; }
mkdir -p "$DEST/oracle"

# llama.cpp: the CMake tree, the library, ggml with the CPU and CUDA backends
excl=()
for d in blas cann et hexagon hip metal musa opencl openvino rpc sycl virtgpu vulkan webgpu zdnn zendnn; do
  excl+=(":(exclude)ggml/src/ggml-$d")
done
git -C "$GIT" archive "$LLAMA_COMMIT" -- \
    CMakeLists.txt LICENSE licenses cmake include src vendor \
    ggml/CMakeLists.txt ggml/cmake ggml/include ggml/src "${excl[@]}" | gzip -9 >"$DEST/llama-src.tar.gz"

cp "$REPO/tests/oracle/oracle.c" "$REPO/tests/oracle/fake_gpu.c" "$REPO/tests/oracle/fake_gpu.h" "$DEST/oracle/"
cp "$HERE/build_llama.sh" "$HERE/device.sh" "$HERE/run_case.sh" "$DEST/"

# The maker, static: the device image's libraries are not this machine's.
# It never reaches the library's remote (libcurl) code, whose symbols stay
# unresolved; fixtures.sha256 (made with the build's own maker) is checked
# on the device before any case runs.
cc -O2 "$FX_OBJ"/*.o "$BUILD/src/libggufmap.a" -static -Wl,--unresolved-symbols=ignore-all -lpthread \
   -o "$DEST/ggufmap-fixture" 2>/dev/null
"$HERE/cases.sh" fixtures "$FIXTURE" >"$DEST/fixtures.tsv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS=$'\t' read -r name args; do
  # shellcheck disable=SC2086 # the maker's arguments split into words
  "$FIXTURE" $args -o "$tmp/$name.gguf" >/dev/null
done <"$DEST/fixtures.tsv"
(cd "$tmp" && sha256sum -- *.gguf) >"$DEST/fixtures.sha256"

# fit's flags in the oracle's spelling (--device cuda: the real device, or
# the fake one device.sh adds for a CPU-only build)
"$HERE/cases.sh" cases "$FIXTURE" | awk -F'\t' -v OFS='\t' '{
  n = split($4, a, " "); o = ""
  for (i = 1; i <= n; i++) {
    f = a[i]
    if (f == "-c") o = o " --ctx " a[++i]
    else if (f == "-np") o = o " --np " a[++i]
    else if (f == "-ctk") o = o " --ctk " a[++i]
    else if (f == "-ctv") o = o " --ctv " a[++i]
    else if (f == "-fa") o = o " --fa " a[++i]
    else if (f == "-ub") o = o " --ub " a[++i]
    else if (f == "-b") o = o " --b " a[++i]
    else if (f == "-ngl") o = o " --ngl " a[++i]
    else if (f == "--device") { if (a[++i] != "cuda") { print "pack: device " a[i] > "/dev/stderr"; exit 1 } }
    else if (f == "--swa-full") o = o " --swa-full"
    else if (f == "-kvu") o = o " --kv-unified"
    else if (f == "-nkvo") o = o " --nkvo"
    else if (f == "--embedding") o = o " --embd"
    else if (f == "-cmoe") o = o " --cpu-moe"
    else if (f == "--no-op-offload") o = o " --no-op-offload"
    else { print "pack: no oracle spelling for " f > "/dev/stderr"; exit 1 }
  }
  print $1, $2, $3, $4, substr(o, 2)
}' >"$DEST/cases.tsv"
if [ -n "$DONE" ]; then
  awk -F'\t' '/^CASE\t/ { c = $2; done[c] = 1 } /^SKIPPED/ { delete done[c] }
               END { for (c in done) print c }' "$DONE" >"$DEST/done.txt"
  awk -F'\t' 'NR == FNR { done[$1] = 1; next } !($1 in done)' "$DEST/done.txt" "$DEST/cases.tsv" >"$DEST/cases.tmp"
  mv "$DEST/cases.tmp" "$DEST/cases.tsv"
  rm -f "$DEST/done.txt"
fi
# the scheduler's graphs (--graph) of a few cases, for the rules that move ops
printf '%s\n' d-gemma4-on-ngl2 d-gemma4-off-ngl2 b-qwen3moe-all b-qwen3moe-all~nofusion c-gemma4-auto \
  e-nemotron_h-all a-llama-q8-4k >"$DEST/graphs.txt"
echo "pack: $DEST: $(wc -l <"$DEST/cases.tsv") cases, $(wc -l <"$DEST/fixtures.tsv") fixtures, $(du -sh "$DEST" | cut -f1)"
