#!/usr/bin/env bash
# web/build.sh [BUILD]: make web.  Compiles the library and the plan and fit
# commands to WebAssembly (web/CMakeLists.txt: Emscripten, warnings as
# errors) in BUILD (default build-web) and assembles the page in BUILD/site:
# index.html, app.js, worker.js, style.css, ggufmap.js, ggufmap.wasm.  Any
# static host serves that folder as it is (docs/web.md).
#
# Debian's emscripten ships its system libraries prebuilt in a frozen,
# read-only cache, so nothing is built there (not even by root) and the
# first build costs no more than the next; EM_CACHE, when set, is used as it
# is.  emcc's JavaScript optimiser needs Debian's acorn (node-acorn), which
# a node from elsewhere (nodesource) does not look for: NODE_PATH says where.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-web}
command -v emcmake >/dev/null || {
  echo "web/build.sh: emcmake is missing: install Debian's emscripten (bash scripts/deps.sh test)" >&2
  exit 1
}
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
mkdir -p "$build"
emcmake cmake -S "$root/web" -B "$build" -DGGUFMAP_WERROR=ON >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j"${JOBS:-$(nproc 2>/dev/null || echo 2)}"
site=$build/site
mkdir -p "$site"
cp "$root"/web/{index.html,app.js,worker.js,style.css} "$build"/ggufmap.{js,wasm} "$site"/
echo "web: the page is in $site (ggufmap.wasm: $(wc -c <"$site/ggufmap.wasm") bytes, ggufmap.js: $(wc -c <"$site/ggufmap.js") bytes)"
