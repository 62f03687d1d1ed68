#!/usr/bin/env bash
# Proof 1 of the llama.cpp patch: the patched llama.cpp maps exactly the
# ranges `ggufmap plan` plans.
#
#   prediction.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR [options]
#
# ORACLE_DIR holds the unpatched prebuilt oracle (tests/oracle/setup.sh) and
# the patched one (tests/patch/build.sh, which prints its directory).
# options:
#   --quick         every 4th case only
#   --only ID[,ID]  these cases only
#   --jobs N        parallel workers (default 2, env PLAN_JOBS)
#   --keep          keep the files of passing cases
#
# The cases are those of tests/plan/differential.sh (its --list: 4
# architectures, 1-3 shards, alignments 8 to 4096, CPU / fake Metal / fake
# CUDA, -ngl 0..all, -ot patterns, --cpu-moe, --n-cpu-moe, repack on/off,
# --no-host, lazy modes, tied/untied, --no-mmap), on its fixtures.  Per case:
#   tight  the patched oracle with LLAMA_ARG_MMAP_PLANNER unset (the default,
#          tight) prints one MAPPED line per range of
#          `ggufmap plan --json --planner tight --page PAGE` and the same ALLOC
#          lines (tests/patch/range_lines.js), PAGE being this system's page
#          size, the one the patch plans with;
#   span   the patched oracle with LLAMA_ARG_MMAP_PLANNER=span prints the
#          ranges of `--planner span`, and exactly the lines of the unpatched
#          prebuilt oracle.
# A load that aborts must be predicted: a CPU_Mapped range starting off 32
# bytes (only fixtures aligned below 32 have one), in the unpatched build too
# for span.  Output: a report per failure (commands, a diff naming the
# differing fields), counts, "P passed, F failed"; exit 1 on any failure,
# fewer than 300 cases (unless --quick/--only), or no case where tight maps
# fewer bytes than span.
set -uo pipefail
export LC_ALL=C

# ---------------------------------------------------------------- arguments
here=$(cd "$(dirname "$0")" && pwd)
plan_dir=$(cd "$here/../plan" && pwd)
. "$here/lib.sh"
proof_args 0 "$@"
shift 4
quick=0 only="" keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --only) only=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --keep) keep=1 ;;
    *) usage ;;
  esac
  shift
done
page=$(getconf PAGESIZE)
rm -rf "$work/cases" "$work/results" "$work/parts" && mkdir -p "$work/cases" "$work/results" "$work/parts"

# ------------------------------------------------- the differential's cases
bash "$plan_dir/differential.sh" "$ggufmap" "$fixture" "$oracle" "$work/list" --list >/dev/null ||
  { echo "prediction: differential.sh --list failed"; echo "0 passed, 1 failed"; exit 1; }
fixlist=$work/list/fixtures.tsv caselist=$work/list/cases.tsv
sel=$work/selected.tsv
awk -F'\t' -v quick="$quick" -v only=",$only," '
  only != ",," { if (index(only, "," $1 ",")) print; next }
  quick && ($1 % 4) != 1 { next }
  { print }' "$caselist" >"$sel"
nsel=$(wc -l <"$sel")

# fixtures, where differential.sh puts them (m.gguf or m-00001-of-0000N.gguf)
declare -A fix_path
needed=" $(cut -f2 "$sel" | sort -u | tr '\n' ' ') "
while IFS=$'\t' read -r key fargs; do
  [[ $needed == *" $key "* ]] || continue
  read -r -a fa <<<"$fargs"
  shards=$(awk '{ for (i = 1; i < NF; i++) if ($i == "--shards") print $(i + 1) }' <<<"$fargs")
  dir=$work/fixtures/$key
  fix_path[$key]=$dir/m.gguf
  [[ ${shards:-1} -gt 1 ]] && fix_path[$key]=$dir/m-00001-of-0000$shards.gguf
  if [[ ! -f ${fix_path[$key]} ]]; then
    rm -rf "$dir" && mkdir -p "$dir"
    "$fixture" "${fa[@]}" -o "$dir/m.gguf" >"$dir/maker.log" 2>&1 || echo "prediction: fixture $key not written (see $dir/maker.log)"
  fi
done <"$fixlist"

# plan's CPU rules for this machine, as differential.sh picks them
hostcpu=${PLAN_CPU:-}
if [[ -z $hostcpu ]]; then
  for p in "${fix_path[@]}"; do
    [[ -f $p ]] && hostcpu=$("$ggufmap" plan "$p" --device cpu --json 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
    [[ -n $hostcpu ]] && break
  done
fi

# ---------------------------------------------------------------- one case

# run_oracle NAME PLANNER CMD...: an oracle run into $d/NAME.*; its RESULT
# in the variable NAME_res
run_oracle() {
  local name=$1
  oracle_run "$d/$name" "${@:2}"
  printf -v "${name}_res" '%s' "$(tail -n 1 "$d/$name.out" | awk '$1 == "RESULT" { print $2 }')"
}

# check WHAT WANT_FILE GOT_NAME: a predicted outcome (lines + EXPECT) against an oracle run
check() {
  local what=$1 want=$2 got=$3 res expect
  res=${got}_res; res=${!res}
  expect=$(awk '$1 == "EXPECT" { print $2 }' "$want")
  grep -v '^EXPECT ' "$want" >"$want.lines"
  if [[ $expect == abort ]]; then
    [[ $res == abort ]] && return 0
    fail+=("$what: an abort predicted (a CPU_Mapped range off 32 bytes), the patched oracle says RESULT ${res:-none}")
  elif [[ $res != ok ]]; then
    fail+=("$what: the patched oracle says RESULT ${res:-none}, a load predicted")
  elif ! cmp -s "$want.lines" "$d/$got.lines"; then
    fail+=("$what: buffer lines (- plan, + patched llama.cpp):"$'\n'"$(showdiff "$want.lines" "$d/$got.lines")")
  else
    return 0
  fi
  return 1
}

run_case() { # the fields of a case line
  local id=$1 key=$2 oargs=$3 pargs=$4 desc=$5
  local d=$work/cases/$id model=${fix_path[$key]} oa pa pre_res="" span_res="" tight_res="" fail=() nb diff=0
  mkdir -p "$d"
  read -r -a oa <<<"$oargs"
  read -r -a pa <<<"$pargs"
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  if [[ ! -f $model ]]; then
    fail+=("fixture $key was not written")
  else
    run_oracle pre default "$oracle" "${oa[@]}" "$model"
    run_oracle span span "$patched" "${oa[@]}" "$model"
    run_oracle tight default "$patched" "${oa[@]}" "$model"
    for p in tight span; do
      timeout 120 "$ggufmap" plan "$model" --json "${pa[@]}" --planner "$p" --page "${page}B" >"$d/plan.$p.json" 2>"$d/plan.$p.err" </dev/null
    done
    if ! node "$here/range_lines.js" "$d/plan.tight.json" "$d/want.tight" "$d/plan.span.json" "$d/want.span" 2>"$d/node.err"; then
      fail+=("plan --json gave no usable document: $(head -c 300 "$d/node.err") $(head -c 300 "$d/plan.tight.err")")
    else
      check "tight" "$d/want.tight" tight
      check "span" "$d/want.span" span
      if [[ $span_res != "$pre_res" ]]; then
        fail+=("span: the patched oracle says RESULT ${span_res:-none}, the unpatched one ${pre_res:-none}")
      elif ! cmp -s "$d/pre.lines" "$d/span.lines"; then
        fail+=("span: buffer lines (- unpatched llama.cpp, + patched with span):"$'\n'"$(showdiff "$d/pre.lines" "$d/span.lines")")
      fi
      cmp -s "$d/want.tight" "$d/want.span" || diff=1
    fi
  fi
  nb=$(cat "$d/tight.lines" 2>/dev/null | wc -l)
  if (( ${#fail[@]} )); then
    {
      echo "--- case $id FAIL: $desc"
      echo "  fixture: $(q "$fixture") $(awk -F'\t' -v k="$key" '$1 == k { print $2 }' "$fixlist") -o $(q "$work/fixtures/$key/m.gguf")"
      echo "  unpatched: $(q "$oracle" "${oa[@]}" "$model")   -> RESULT ${pre_res:-none}"
      echo "  patched:   [LLAMA_ARG_MMAP_PLANNER=span] $(q "$patched" "${oa[@]}" "$model")   -> span ${span_res:-none}, tight ${tight_res:-none}"
      echo "  plan:      $(q "$ggufmap" plan "$model" --json "${pa[@]}" --planner tight --page "${page}B")"
      printf '  %s\n' "${fail[@]}"
    } >"$d.report"
    echo "$id FAIL $nb $diff" >>"$work/results/r.$BASHPID"
  else
    echo "$id PASS $nb $diff" >>"$work/results/r.$BASHPID"
    (( keep )) || rm -rf "$d"
  fi
}

start=$SECONDS
split -n "r/$jobs" "$sel" "$work/parts/"
for part in "$work"/parts/*; do
  ( while IFS=$'\t' read -r id key oargs pargs desc; do run_case "$id" "$key" "$oargs" "$pargs" "$desc"; done <"$part" ) &
done
wait

# ---------------------------------------------------------------- summary
cat "$work"/results/r.* 2>/dev/null | sort -n >"$work/results.txt"
read -r ran passed failed bufs differ < <(awk '{ n++; p += $2 == "PASS"; f += $2 == "FAIL" }
  $2 == "PASS" { b += $3; d += $4 } END { print n + 0, p + 0, f + 0, b + 0, d + 0 }' "$work/results.txt")
nreport=0
for id in $(awk '$2 == "FAIL" { print $1 }' "$work/results.txt"); do
  nreport=$((nreport + 1))
  (( nreport <= 60 )) && cat "$work/cases/$id.report"
done
(( nreport > 60 )) && echo "... $((nreport - 60)) more reports in $work/cases/*.report"
echo "page: $page, plan's CPU rules: ${hostcpu:-default}, $((SECONDS - start)) s, $jobs jobs"
echo "cases: $ran, patched buffers matched: $bufs, cases where tight maps other ranges than span: $differ"
echo "$passed passed, $failed failed"
rc=0
(( failed > 0 )) && rc=1
(( ran < nsel )) && { echo "prediction: only $ran of $nsel selected cases reported a result"; rc=1; }
if (( quick == 0 )) && [[ -z $only ]] && (( ran < 300 )); then echo "prediction: fewer than 300 cases ran"; rc=1; fi
(( differ > 0 )) || { echo "prediction: no case where tight and span differ: the test would not see the patch"; rc=1; }
exit $rc
