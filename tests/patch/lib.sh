# shellcheck shell=bash
# Helpers shared by the proofs of the llama.cpp patch (sourced); they also
# use tests/plan/lib.sh's usage, q and showdiff, sourced here.
. "$(dirname "${BASH_SOURCE[0]}")/../plan/lib.sh"

# patched_build ORACLE_DIR: sets patched_dir to the patched llama.cpp
# (tests/patch/build.sh prints it, building it first if needed) and patched
# to its oracle; else says why and exits 1 as a failed test.
patched_build() {
  patched_dir=$(bash "$(dirname "${BASH_SOURCE[0]}")/build.sh" "$1") ||
    { echo "$(basename "$0"): the patched llama.cpp could not be built"; echo "0 passed, 1 failed"; exit 1; }
  patched=$patched_dir/bin/ggufmap-oracle
}

# proof_args N GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR ...: the arguments
# every proof takes first, of N in all (N = 0: any number from 4).  Sets
# ggufmap, fixture, oracle (the unpatched one), patched_dir and patched
# (patched_build), work (created, made absolute) and jobs (PLAN_JOBS,
# default 2); usage if the count is wrong; a program that is not there, node
# included (every proof reads JSON with it), fails the test.
proof_args() {
  local n=$1
  shift
  [[ $# -ge 4 ]] && (( n == 0 || $# == n )) || usage
  command -v node >/dev/null ||
    { echo "$(basename "$0"): node not found (scripts/deps.sh installs nodejs)"; echo "0 passed, 1 failed"; exit 1; }
  ggufmap=$1 fixture=$2 oracle=$3/bin/ggufmap-oracle
  patched_build "$3"
  local b
  for b in "$ggufmap" "$fixture" "$oracle" "$patched"; do
    [[ -x $b ]] || { echo "$(basename "$0"): not executable: $b"; echo "0 passed, 1 failed"; exit 1; }
  done
  work=$(mkdir -p "$4" && cd "$4" && pwd)
  jobs=${PLAN_JOBS:-2}
}

# write_report FILE TITLE LINE...: a failed case's report, "--- TITLE" and
# its lines indented (the commands to rerun it, then what failed), as
# prediction.sh writes its own
write_report() {
  local file=$1 title=$2
  shift 2
  { echo "--- $title"; printf '  %s\n' "$@"; } >"$file"
}

# oracle_run PREFIX PLANNER CMD...: runs an oracle command with
# LLAMA_ARG_MMAP_PLANNER=PLANNER (unset for "default", the patch's tight),
# stdin closed, 300 s at most, into PREFIX.out and PREFIX.err; its buffer
# lines (and, with --mtp, the "LOAD mtp" line between the two loads) into
# PREFIX.lines.  Returns the command's status.
oracle_run() {
  local prefix=$1 planner=$2 rc
  shift 2
  if [[ $planner == default ]]; then
    env -u LLAMA_ARG_MMAP_PLANNER timeout 300 "$@" >"$prefix.out" 2>"$prefix.err" </dev/null
  else
    LLAMA_ARG_MMAP_PLANNER=$planner timeout 300 "$@" >"$prefix.out" 2>"$prefix.err" </dev/null
  fi
  rc=$?
  grep -E '^(MAPPED|ALLOC|LOAD) ' "$prefix.out" >"$prefix.lines"
  return $rc
}
