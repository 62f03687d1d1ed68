#!/usr/bin/env bash
# Build the arm64 variant of the llama.cpp oracle, run under qemu-user.
#
# usage: tests/oracle/arm64/setup.sh DIR [X86_ORACLE_DIR]
#
# Into DIR (created if needed) this
#   0. checks for qemu-aarch64 and the aarch64 cross toolchain/sysroot; as root
#      it apt-installs the missing Debian packages (GGUFMAP_NO_APT=1: never),
#   1. installs the prebuilt llama.cpp v0.5.0 arm64 libraries from the npm
#      package @node-llama-cpp/linux-arm64@3.22.1 (npm i -E --prefix DIR/npm),
#   2. copies the matching headers from X86_ORACLE_DIR/hdr (made by
#      tests/oracle/setup.sh) when given and valid, else extracts them from
#      node-llama-cpp@3.22.1's llama.cpp bundle exactly as that script does,
#   3. cross-compiles tests/oracle/oracle.c -> DIR/bin/ggufmap-oracle-arm64,
#      plus DIR/bin/ggml-cpu-report-arm64 and DIR/lib/repack-probe.so, writes
#      DIR/lib/syms/*.syms and the runner DIR/bin/ggufmap-oracle-arm64-run,
#   4. checks under qemu that the expected CPU variant loads (DIR/cpu-report.txt).
# Each step leaves a stamp file and is skipped when already done.
# On success the only output is the runner's path on stdout.
# On failure: "oracle-arm64 setup: <what failed>" on stderr, exit status 1.
# Network: apt (step 0, only when packages are missing) and the npm registry
# (steps 1 and 2, first run only).
set -euo pipefail

BIN_PKG="@node-llama-cpp/linux-arm64"
# Apple Silicon-like: DOTPROD, FP16, I8MM, BF16, no SVE/SME (qemu 7.2 has no
# Apple model; 'max' minus SVE, which also drops SME). Override at run time
# with --cpu or GGUFMAP_ORACLE_ARM64_CPU.
DEFAULT_CPU="max,sve=off,sme=off"
EXPECTED_VARIANT="libggml-cpu-armv8.2_2.so"   # what the Linux package loads for it
SYSROOT=/usr/aarch64-linux-gnu
CC=aarch64-linux-gnu-gcc
NM=aarch64-linux-gnu-nm
APT_PACKAGES=(qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libc6-arm64-cross libstdc++6-arm64-cross)

die() { printf 'oracle-arm64 setup: %s\n' "$*" >&2; exit 1; }

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then die "usage: setup.sh DIR [X86_ORACLE_DIR]"; fi

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ORACLE_DIR=$(cd "$SCRIPT_DIR/.." && pwd)
ORACLE_SRC="$ORACLE_DIR/oracle.c"
# sources compiled together with oracle.c, as tests/oracle/setup.sh does
# (fake_gpu.c: the fake GPU device, when present in this tree)
ORACLE_EXTRA=()
[ -f "$ORACLE_DIR/fake_gpu.c" ] && ORACLE_EXTRA+=("$ORACLE_DIR/fake_gpu.c")
REPORT_SRC="$SCRIPT_DIR/cpu-report.c"
PROBE_SRC="$SCRIPT_DIR/repack-probe.c"
X86_DIR=${2:-}

mkdir -p "$1" || die "cannot create directory '$1'"
DIR=$(cd "$1" && pwd)
LOG="$DIR/setup.log"
: >"$LOG" || die "cannot write $LOG"
# shellcheck source=tests/oracle/common.sh
. "$ORACLE_DIR/common.sh"

for f in "$ORACLE_SRC" "$REPORT_SRC" "$PROBE_SRC"; do [ -f "$f" ] || die "missing $f"; done
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) die "unsupported host $(uname -s)-$(uname -m): this runs the arm64 libraries under qemu-user on Linux x86-64" ;;
esac

# --- 0. host packages -----------------------------------------------------------
pkg_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
tools_ok() {
    command -v qemu-aarch64 >/dev/null 2>&1 && command -v "$CC" >/dev/null 2>&1 &&
        command -v "$NM" >/dev/null 2>&1 && [ -f "$SYSROOT/include/stdio.h" ] &&
        [ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] && [ -e "$SYSROOT/lib/libstdc++.so.6" ]
}
if ! tools_ok; then
    missing=()
    if command -v dpkg-query >/dev/null 2>&1; then
        for p in "${APT_PACKAGES[@]}"; do if pkg_missing "$p"; then missing+=("$p"); fi; done
    fi
    if ((${#missing[@]} == 0)); then
        die "qemu-aarch64, $CC, $NM or the aarch64 sysroot ($SYSROOT: stdio.h, ld-linux-aarch64.so.1, libstdc++.so.6) not found; install: ${APT_PACKAGES[*]} (Debian) or scripts/deps.sh"
    fi
    if [ "${GGUFMAP_NO_APT:-0}" = 1 ] || [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "missing Debian packages: ${missing[*]} (run as root: apt-get install ${missing[*]}, or scripts/deps.sh)"
    fi
    printf 'oracle-arm64 setup: apt-get install %s\n' "${missing[*]}" >&2
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >>"$LOG" 2>&1 ||
        die "apt-get install ${missing[*]} failed (see $LOG)"
    tools_ok || die "installed ${missing[*]} but qemu-aarch64/$CC/$NM/sysroot are still missing"
fi
command -v node >/dev/null 2>&1 || die "node not found in PATH (install nodejs and npm; Debian: apt-get install nodejs npm)"
command -v npm  >/dev/null 2>&1 || die "npm not found in PATH (Debian: apt-get install npm)"

# --- 1. prebuilt arm64 libraries ----------------------------------------------------
BINS="$DIR/npm/node_modules/$BIN_PKG/bins/linux-arm64"
STAMP_NPM="$DIR/.stamp-npm-$NLC_VERSION"
if [ ! -f "$STAMP_NPM" ] || [ ! -f "$BINS/libllama.$LLAMA_RELEASE.so" ]; then
    rm -f "$STAMP_NPM"
    install_prebuilt "$BIN_PKG" "$DIR/npm" "$BINS" ggufmap-oracle-arm64-deps "$EXPECTED_VARIANT"
    grep -q '"arch":"arm64"' "$BINS/_nlcBuildMetadata.json" ||
        die "$BINS/_nlcBuildMetadata.json does not say arch arm64"
    file_out=$(LC_ALL=C od -An -tx1 -j18 -N2 "$BINS/libllama.$LLAMA_RELEASE.so" | tr -d ' ')
    [ "$file_out" = "b700" ] || die "$BINS/libllama.$LLAMA_RELEASE.so is not an aarch64 ELF (e_machine $file_out)"
    touch "$STAMP_NPM"
fi

# --- 2. matching headers ----------------------------------------------------------
HDR="$DIR/hdr"
install_headers "$DIR" "$X86_DIR"

# --- 3. cross-compile -------------------------------------------------------------------
mkdir -p "$DIR/bin" "$DIR/lib/syms"
CFLAGS=(-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
        -isystem "$HDR/include" -isystem "$HDR/ggml/include")
# shellcheck disable=SC2054 # the commas belong to the linker flag
LINK_BASE=(-L"$BINS" "-Wl,-rpath,$BINS")
ORACLE="$DIR/bin/ggufmap-oracle-arm64"
REPORT="$DIR/bin/ggml-cpu-report-arm64"
PROBE="$DIR/lib/repack-probe.so"
RUNNER="$DIR/bin/ggufmap-oracle-arm64-run"
# ggml-backend-impl.h (internal structs of the pinned tree) and fake_gpu.h
ORACLE_CFLAGS=(-isystem "$HDR/ggml/src" -I"$ORACLE_DIR")
build_key=$( { cat "$ORACLE_SRC" ${ORACLE_EXTRA[@]+"${ORACLE_EXTRA[@]}"} "$ORACLE_DIR"/*.h "$REPORT_SRC" "$PROBE_SRC" \
                   "${BASH_SOURCE[0]}" "$HDR/ggml/src/ggml-backend-impl.h"
               printf '%s\n' "${CFLAGS[*]}" "${ORACLE_CFLAGS[*]}" "$BINS" "$NLC_VERSION"; "$CC" -dumpfullversion; } |
             sha256sum | cut -d' ' -f1)
STAMP_BUILD="$DIR/.stamp-build"
if [ ! -x "$ORACLE" ] || [ ! -x "$REPORT" ] || [ ! -f "$PROBE" ] || [ ! -x "$RUNNER" ] ||
   [ "$(cat "$STAMP_BUILD" 2>/dev/null || true)" != "$build_key" ]; then
    rm -f "$STAMP_BUILD"
    "$CC" "${CFLAGS[@]}" "${ORACLE_CFLAGS[@]}" -o "$ORACLE.tmp" "$ORACLE_SRC" ${ORACLE_EXTRA[@]+"${ORACLE_EXTRA[@]}"} \
        "${LINK_BASE[@]}" -rdynamic \
        -l:"libllama.$LLAMA_RELEASE.so" -l:"libggml.$LLAMA_RELEASE.so" -l:libggml-base.so -ldl >>"$LOG" 2>&1 ||
        die "cross-compiling $ORACLE_SRC ${ORACLE_EXTRA[*]:-} with $CC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    "$CC" "${CFLAGS[@]}" -o "$REPORT.tmp" "$REPORT_SRC" "${LINK_BASE[@]}" \
        -l:"libllama.$LLAMA_RELEASE.so" -l:"libggml.$LLAMA_RELEASE.so" -l:libggml-base.so -ldl >>"$LOG" 2>&1 ||
        die "cross-compiling $REPORT_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    "$CC" "${CFLAGS[@]}" -fPIC -shared -o "$PROBE.tmp" "$PROBE_SRC" "${LINK_BASE[@]}" -l:libggml-base.so -ldl >>"$LOG" 2>&1 ||
        die "cross-compiling $PROBE_SRC failed: $(tail -n 5 "$LOG" | tr '\n' ' ')"
    exported=$("$NM" -D --defined-only "$ORACLE.tmp" 2>>"$LOG") || die "$NM failed on $ORACLE.tmp"
    for sym in ggml_backend_dev_buffer_from_host_ptr ggml_backend_alloc_ctx_tensors_from_buft ggml_backend_tensor_alloc; do
        grep -qw "$sym" <<<"$exported" || die "built oracle does not export $sym (need -rdynamic)"
    done
    # addresses of the repack layouts (function-local statics of
    # ggml_repack_get_optimal_repack_type) in each CPU variant, for repack-probe.so
    for so in "$BINS"/libggml-cpu-*.so; do
        "$NM" "$so" 2>>"$LOG" |
            sed -nE 's/^([0-9a-f]+) [dDbBrR] _ZZL[0-9]+ggml_repack_get_optimal_repack_typePK11ggml_tensorE[0-9]+([A-Za-z0-9_]+)$/\1 \2/p' \
            >"$DIR/lib/syms/$(basename "$so").syms"
    done
    [ -s "$DIR/lib/syms/$EXPECTED_VARIANT.syms" ] ||
        die "no repack layout symbols in $EXPECTED_VARIANT (library stripped?)"
    # shellcheck disable=SC2016 # the runner's own $-expressions are written literally
    {
        printf '#!/usr/bin/env bash\n'
        printf '# Generated by tests/oracle/arm64/setup.sh: runs the arm64 oracle under qemu-user.\n'
        printf '# usage: %s [--cpu MODEL] [--layout] [--cpu-report] [ORACLE ARGS...]\n' "$(basename "$RUNNER")"
        printf '#   --cpu MODEL   qemu -cpu (default $GGUFMAP_ORACLE_ARM64_CPU or %s)\n' "$DEFAULT_CPU"
        printf '#   --layout      preload repack-probe.so: LAYOUT name=T traits=L lines\n'
        printf '#   --cpu-report  run ggml-cpu-report-arm64 instead of the oracle\n'
        printf 'set -euo pipefail\n'
        printf 'cpu=${GGUFMAP_ORACLE_ARM64_CPU:-%q}\n' "$DEFAULT_CPU"
        printf 'exe=%q\n' "$ORACLE"
        printf 'env=()\n'
        printf 'while [ $# -gt 0 ]; do\n'
        printf '    case $1 in\n'
        printf '        --cpu) [ $# -ge 2 ] || { echo "%s: --cpu needs a model" >&2; exit 2; }; cpu=$2; shift 2 ;;\n' "$(basename "$RUNNER")"
        printf '        --layout) env=(-E LD_PRELOAD=%q -E GGUFMAP_REPACK_SYMS_DIR=%q); shift ;;\n' "$PROBE" "$DIR/lib/syms"
        printf '        --cpu-report) exe=%q; shift ;;\n' "$REPORT"
        printf '        *) break ;;\n'
        printf '    esac\n'
        printf 'done\n'
        printf 'exec qemu-aarch64 -cpu "$cpu" -L %q ${env[@]+"${env[@]}"} "$exe" "$@"\n' "$SYSROOT"
    } >"$RUNNER.tmp"
    chmod +x "$RUNNER.tmp"
    mv "$ORACLE.tmp" "$ORACLE"
    mv "$REPORT.tmp" "$REPORT"
    mv "$PROBE.tmp" "$PROBE"
    mv "$RUNNER.tmp" "$RUNNER"

    # --- 4. check under qemu ----------------------------------------------------------
    "$RUNNER" --cpu-report >"$DIR/cpu-report.txt" 2>>"$LOG" ||
        die "ggml-cpu-report-arm64 failed under qemu-aarch64 -cpu $DEFAULT_CPU (see $LOG)"
    grep -qx "VARIANT name=$EXPECTED_VARIANT" "$DIR/cpu-report.txt" ||
        die "under -cpu $DEFAULT_CPU ggml loaded $(grep '^VARIANT' "$DIR/cpu-report.txt" || echo 'no CPU variant'), expected $EXPECTED_VARIANT (see $DIR/cpu-report.txt)"
    grep -qx "FEATURE DOTPROD=1" "$DIR/cpu-report.txt" || die "CPU backend reports no DOTPROD (see $DIR/cpu-report.txt)"
    bufts=$("$RUNNER" --list-bufts 2>>"$LOG") || die "arm64 oracle --list-bufts failed under qemu (see $LOG)"
    grep -q '^BUFT name=CPU_REPACK ' <<<"$bufts" || die "arm64 oracle lists no CPU_REPACK buffer type: $bufts"
    if grep -q -- '"--fake-gpu"' "$ORACLE_SRC"; then
        for k in metal cuda; do
            "$RUNNER" --fake-gpu "$k" --list-bufts >>"$LOG" 2>&1 ||
                die "arm64 oracle cannot register its fake $k GPU under qemu (see $LOG)"
        done
    fi
    printf '%s\n' "$build_key" >"$STAMP_BUILD"
fi

printf '%s\n' "$RUNNER"
