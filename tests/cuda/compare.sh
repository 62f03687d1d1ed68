#!/usr/bin/env bash
# `ggufmap fit --device cuda` against what llama.cpp v0.5.0 allocated on a
# real NVIDIA H200 (docs/cuda.md): the recorded results (tests/cuda/results,
# made by tests/cuda/device.sh on the device machine) hold every case's
# buffers; this remakes the same fixtures here, byte for byte (their sha256
# was recorded with the results), runs fit on every recorded case and
# compares buffer by buffer (compare.js).  No GPU needed: this is how CI
# keeps fit's CUDA rules honest.
#
# usage: compare.sh GGUFMAP FIXTURE RESULTS_DIR WORKDIR [STRIDE] [--list]
#   (RESULTS_DIR/known.txt, when there, lists the mismatches docs/cuda.md
#   explains: compare.js --known)
#   RESULTS_DIR  results.txt (CASE lines and llama.cpp's buffers) and
#                fixtures.sha256
#   STRIDE       compare every STRIDE-th case only (default 1: all)
# Exit status 1 on any mismatch (each is listed) or a fixture that differs.
set -uo pipefail

[ $# -ge 4 ] || { echo "usage: compare.sh GGUFMAP FIXTURE RESULTS_DIR WORKDIR [STRIDE] [--list]" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 RESULTS=$(cd "$3" && pwd)/results.txt SUMS=$(cd "$3" && pwd)/fixtures.sha256 WORK=$4 STRIDE=${5:-1} LIST=${6:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
[ -f "$RESULTS" ] && [ -f "$SUMS" ] || { echo "FAIL: $3 lacks results.txt or fixtures.sha256" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK" && mkdir -p "$WORK/fx" "$WORK/json" || exit 1

# the recorded cases (every STRIDE-th), as the device ran them
awk -F'\t' -v s="$STRIDE" '
  /^CASE\t/ { n++; keep = ((n - 1) % s == 0) }
  keep { print }' "$RESULTS" >"$WORK/results.txt"

# the fixtures these cases use, made as cases.sh says, checked against the
# device's
"$HERE/cases.sh" fixtures "$FIXTURE" >"$WORK/fixtures.tsv" || exit 1
cut -f3 <(grep '^CASE' "$WORK/results.txt") | sort -u >"$WORK/used"
while IFS=$'\t' read -r name args; do
  grep -qxF "$name" "$WORK/used" || continue
  # shellcheck disable=SC2086 # the maker's arguments split into words
  "$FIXTURE" $args -o "$WORK/fx/$name.gguf" >/dev/null || { echo "FAIL: fixture $name: $args" >&2; exit 1; }
done <"$WORK/fixtures.tsv"
if ! (cd "$WORK/fx" && awk 'NR == FNR { used[$1 ".gguf"] = 1; next } $2 in used' "$WORK/used" "$SUMS" |
      sha256sum --quiet -c -); then
  echo "FAIL: the fixtures made here differ from those the device ran (fixtures.sha256)" >&2
  exit 1
fi

# fit on every case
i=0
while IFS=$'\t' read -r tag name fx env args; do
  [ "$tag" = CASE ] || continue
  i=$((i + 1))
  envs=()
  [ "$env" = - ] || envs=("$env")   # fit reads GGML_CUDA_DISABLE_FUSION as llama.cpp does
  # shellcheck disable=SC2086 # fit's flags split into words
  env ${envs[@]+"${envs[@]}"} "$GGUFMAP" fit "$WORK/fx/$fx.gguf" $args -nr --page 1B --json >"$WORK/json/$i.json" 2>"$WORK/json/$i.err"
  echo $? >"$WORK/json/$i.rc"
done < <(grep '^CASE' "$WORK/results.txt")

known=()
[ -f "$3/known.txt" ] && known=(--known "$3/known.txt")
# shellcheck disable=SC2086 # --list or nothing
node "$HERE/compare.js" "$WORK/results.txt" "$WORK/json" $LIST ${known[@]+"${known[@]}"}
