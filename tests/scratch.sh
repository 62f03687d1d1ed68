# shellcheck shell=bash
# A test's scratch folder (sourced by the test scripts).
#
# The suite runs twice on CI (plain, then ASan+UBSan) on a machine whose free
# disk is not ours to choose; kept, the folders of 170 tests came to 7 GiB and
# the second run met "No space left on device".  So a test's folder lives as
# long as the test: removed when the script exits 0, kept when it fails (the
# files to look at), kept always with GGUFMAP_KEEP_SCRATCH=1.
#
# Not for a ctest fixture's setup (oracle, patched, fuzz seeds, web site):
# later tests read what those leave.

# scratch DIR: DIR made fresh and empty; removed at a passing exit.  Takes
# the EXIT trap; a script with its own exit work registers it with at_exit.
scratch() {
  scratch_dir=$1
  rm -rf "$scratch_dir" && mkdir -p "$scratch_dir" || { echo "cannot create $scratch_dir" >&2; exit 1; }
  trap scratch_exit EXIT
}

# at_exit CMD: CMD runs at exit, before the scratch folder goes (servers
# stopped first, so nothing writes into a folder being removed).
scratch_exit_cmds=()
at_exit() { scratch_exit_cmds+=("$1"); trap scratch_exit EXIT; }

scratch_exit() {
  local rc=$? cmd
  for cmd in "${scratch_exit_cmds[@]}"; do $cmd; done
  if [[ $rc == 0 && -n ${scratch_dir:-} && -z ${GGUFMAP_KEEP_SCRATCH:-} ]]; then rm -rf "$scratch_dir"; fi
  exit "$rc"
}
