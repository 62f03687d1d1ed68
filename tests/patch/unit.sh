#!/usr/bin/env bash
# The patch series' own unit test (tests/test-mmap-planner.cpp of the series,
# built by tests/patch/build.sh against the patched libllama): the planners'
# syntax and results, tight against brute force, the range-aware buffer map.
#
#   unit.sh ORACLE_DIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
patched_build "${1:?usage: unit.sh ORACLE_DIR}"
"$patched_dir/bin/test-mmap-planner" && echo "test-mmap-planner: passed"
