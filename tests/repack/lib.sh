# shellcheck shell=bash
# Shared by the repack tests, tests/load/cli.sh and tests/cli/special_files.sh
# (sourced after ggufmap and work are set): the check counters, and plan's
# foreign bytes.  Each test ends with `summary`.
export LC_ALL=C
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
# repack's scratch headers (and what a kill -9 leaves of them) stay in the test's folder
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# "P passed, F failed"; the exit status says whether all passed (and any ran)
summary() { echo "$passed passed, $failed failed"; (( failed == 0 && passed > 0 )); }

# foreign PLAN_ARGS...: foreign bytes in llama.cpp's mapped buffers, from plan --json
foreign() { "$ggufmap" plan "$@" --json | node -e '
  let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
    let f = 0; for (const b of JSON.parse(s).buffers) if (b.mapped) f += b.foreign_bytes; console.log(f); });'; }
