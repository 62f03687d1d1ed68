#!/usr/bin/env bash
# Runs every benchmark in bench/ against BUILD_DIR (default build).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bash bench/startup.sh "$build"
bash bench/inspect_vs_ggml.sh "$build"
bash bench/plan_advice_regex.sh "$build"
bash bench/plan_vs_inspect.sh "$build"
bash bench/load_scaled.sh "$build"
bash bench/remote_vs_hf.sh "$build"
bash bench/patch_load.sh "$build" 2G 21
