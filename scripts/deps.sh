#!/usr/bin/env bash
# Installs the Debian packages ggufmap needs, and nothing else:
#   deps.sh build   what building (and make demo, make install) needs
#   deps.sh test    that, and what the test suite and benchmarks need
#   deps.sh web     what make web needs: build's, and Emscripten
# Idempotent: a package already installed is not touched, and apt is not
# called at all when nothing is missing. Run as root (or through sudo).
set -euo pipefail

build_packages=(
  build-essential  # gcc, make: the C11 toolchain
  cmake            # the build (>= 3.25; bookworm ships 3.25.1)
  pkg-config       # finds libcrypto, and tests our .pc file
  libssl-dev       # libcrypto's SHA-256 for hashing tensor data
  libcurl4-openssl-dev # HTTP(S) range requests: inspect/plan/fit of models on servers and Hugging Face
)

web_packages=(
  emscripten       # make web: the library as WebAssembly (3.1.6; its system libraries come prebuilt)
)

test_packages=(
  nodejs npm       # installs the pinned prebuilt llama.cpp that tests use as oracle; JSON checks
  git              # unpacks the llama.cpp source bundle for the oracle's headers
  ca-certificates  # TLS to the npm registry
  # the remote tests serve models with nginx (TLS with a certificate openssl
  # makes) and a fault server in Python 3, which also regenerates
  # src/arch_table.c from llama.cpp's source (tests/arch)
  nginx openssl python3
  # the arm64 llama.cpp oracle (CPU_REPACK rules of Apple-like CPUs) runs
  # under qemu-user, built with the aarch64 cross compiler
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libc6-arm64-cross libstdc++6-arm64-cross
  # -ot patterns are std::regex; tests/regex compiles a probe against the two
  # C++ libraries llama.cpp is built with: libstdc++ as in GCC 11 (the
  # prebuilt llama.cpp's) and LLVM's libc++ (macOS builds)
  g++-11 clang libc++-dev libc++abi-dev
  librsvg2-bin     # rsvg-convert renders plan's SVG figure to PNG (tests/cli/svg.sh)
  groff-base       # checks that the generated man page renders without warnings (tests/cli/docs.sh)
  bsdutils         # script(1): a terminal for the progress and colour tests (tests/cli/progress.sh)
  "${web_packages[@]}"
  chromium         # tests/web drives the page in a real browser (headless, through playwright-core from npm)
)

case ${1:-build} in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  web) packages=("${build_packages[@]}" "${web_packages[@]}") ;;
  *) echo "usage: deps.sh [build|test|web]" >&2; exit 1 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm may come from elsewhere (nodesource, nvm); accept any working npm.
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]+"${missing[@]}"}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
