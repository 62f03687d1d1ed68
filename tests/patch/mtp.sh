#!/usr/bin/env bash
# Proof of the llama.cpp patch for the MTP draft head: its load (load_mtp,
# the second load `ggufmap-oracle --mtp` makes of the same file) maps the
# ranges `ggufmap plan --mtp` plans, through the same code as the model's.
#
#   mtp.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR
#
# ORACLE_DIR holds the unpatched prebuilt oracle (tests/oracle/setup.sh) and
# the patched one (tests/patch/build.sh, which prints its directory).
# Fixtures, for every architecture whose NextN (MTP) blocks llama.cpp loads
# on request (`ggufmap-fixture --list-archs`, extras "mtp"):
#   S  q4_0, 4 trunk blocks and one NextN block, shuffled: the MTP tensors
#      lie between the trunk's, so the first load's runs end at them and the
#      second load's runs take them in;
#   T  q4_0, tied output, in llama.cpp's creation order (issue 22941's
#      shape: the MTP head's GPU tensors are token_embd at the start and the
#      NextN block at the end); untied where the arch requires output.weight;
#   N  two NextN blocks, shuffled (glm4moe, qwen35, deepseek2).
# Loads: S on the CPU (repack on), on the fake Metal device at -ngl 2 and at
# -ngl all; T at -ngl 2; N on the CPU and at -ngl all.  Per case, the
# patched oracle with --mtp prints, for both loads with the "LOAD mtp" line
# between them, the MAPPED lines of the ranges of `ggufmap plan --mtp --json
# --planner tight --page PAGE` (the default) and of `--planner span`
# (LLAMA_ARG_MMAP_PLANNER=span), and the same ALLOC lines
# (tests/patch/range_lines.js, which reads the plan's "mtp" member); with
# span it prints exactly the unpatched oracle's lines.  Also required: the
# MTP load maps other buffers than the model's load in some case of each
# architecture (not exaone4: llama.cpp skips its NextN block even with
# load_mtp, exaone4.cpp:39-43), and tight maps other ranges than span in
# the MTP load of some case.  Output: "ok"/"FAIL" per case, then
# "P passed, F failed"; exit 1 on any failure.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
proof_args 4 "$@"
page=$(getconf PAGESIZE)
rm -rf "${work:?}"/*
mkdir -p "$work/results"

# ---------------------------------------------------------------- the cases
# make_fixture KEY ARGS...: writes $work/KEY.gguf; prints its path, or nothing
make_fixture() {
  "$fixture" "${@:2}" -o "$work/$1.gguf" >"$work/$1.maker.log" 2>&1 && echo "$work/$1.gguf"
}

# a case: ARCH TAB MODEL TAB ORACLE FLAGS TAB PLAN FLAGS TAB DESCRIPTION ("-"
# for no flags: read splits on tabs and would merge empty fields)
cases=$work/cases.tsv
: >"$cases"
add() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3:--}" "${4:--}" "$5" >>"$cases"; }
missing=""
while read -r arch extras _; do
  [[ $extras == *mtp* ]] || continue
  S=$(make_fixture "$arch.S" --arch "$arch" --type q4_0 --layers 4 --order shuffle:3)
  T=$(make_fixture "$arch.T" --arch "$arch" --type q4_0 --layers 4 --tied) ||
    T=$(make_fixture "$arch.T" --arch "$arch" --type q4_0 --layers 4)
  [[ -n $S ]] || missing+=" $arch.S"
  [[ -n $T ]] || missing+=" $arch.T"
  add "$arch" "$S" "" "" "S cpu"
  add "$arch" "$S" "--fake-gpu metal --ngl 2" "--device metal -ngl 2" "S metal -ngl 2"
  add "$arch" "$S" "--fake-gpu metal --ngl -1" "--device metal -ngl all" "S metal -ngl all"
  add "$arch" "$T" "--fake-gpu metal --ngl 2" "--device metal -ngl 2" "T metal -ngl 2"
  case $arch in glm4moe | qwen35 | deepseek2)
    N=$(make_fixture "$arch.N" --arch "$arch" --type q4_0 --layers 4 --nextn 2 --order shuffle:5)
    [[ -n $N ]] || missing+=" $arch.N"
    add "$arch" "$N" "" "" "N (2 NextN blocks) cpu"
    add "$arch" "$N" "--fake-gpu metal --ngl -1" "--device metal -ngl all" "N (2 NextN blocks) metal -ngl all" ;;
  esac
done < <("$fixture" --list-archs | tail -n +2)

# plan's CPU rules for this machine: the fake Metal device computes on this
# CPU, while plan --device metal would take Apple Silicon's
hostcpu=${PLAN_CPU:-}
[[ -n $hostcpu ]] || hostcpu=$("$ggufmap" plan "$(cut -f2 "$cases" | head -n 1)" --device cpu --json 2>/dev/null |
  node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).cpu)')

# ---------------------------------------------------------------- one case
# load2 FILE: the lines after "LOAD mtp" (the MTP head's load)
load2() { sed -n '/^LOAD mtp$/,$p' "$1" | tail -n +2; }
# load1 FILE: the lines before it
load1() { sed '/^LOAD mtp$/,$d' "$1"; }

# run_case ID ARCH MODEL OFLAGS PFLAGS DESC: a line "ID PASS|FAIL ARCH
# MTP-DIFFERS TIGHT-DIFFERS" in the results, a report for a failure
run_case() {
  local id=$1 arch=$2 model=$3 oa pa d=$work/case.$1 p fail=() differs=0 tighter=0
  [[ $4 == - ]] && oa=() || read -r -a oa <<<"$4"
  [[ $5 == - ]] && pa=() || read -r -a pa <<<"$5"
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  mkdir -p "$d"
  if [[ ! -f $model ]]; then
    fail+=("the fixture was not written")
  else
    oracle_run "$d/pre" default "$oracle" "${oa[@]}" --mtp "$model"
    for p in tight span; do
      oracle_run "$d/$p" "${p/tight/default}" "$patched" "${oa[@]}" --mtp "$model"
      timeout 120 "$ggufmap" plan "$model" --json --mtp "${pa[@]}" --planner "$p" --page "${page}B" \
        >"$d/plan.$p.json" 2>"$d/plan.$p.err" </dev/null
    done
    if ! node "$here/range_lines.js" "$d/plan.tight.json" "$d/want.tight" "$d/plan.span.json" "$d/want.span" 2>"$d/node.err"; then
      fail+=("plan --mtp --json gave no usable document: $(head -c 300 "$d/node.err") $(head -c 300 "$d/plan.tight.err")")
    else
      for p in tight span; do
        grep -v '^EXPECT ' "$d/want.$p" >"$d/want.$p.lines"
        if ! grep -q '^RESULT ok' "$d/$p.out"; then
          fail+=("$p: the patched oracle says $(grep -m1 -E '^(RESULT|ABORT|ERR)' "$d/$p.out"), a load predicted")
        elif ! grep -qx 'LOAD mtp' "$d/$p.lines"; then
          fail+=("$p: the patched oracle printed no MTP load")
        elif ! cmp -s "$d/want.$p.lines" "$d/$p.lines"; then
          fail+=("$p: buffer lines (- plan, + patched llama.cpp):"$'\n'"$(showdiff "$d/want.$p.lines" "$d/$p.lines")")
        fi
      done
      cmp -s "$d/pre.lines" "$d/span.lines" ||
        fail+=("span: buffer lines (- unpatched llama.cpp, + patched with span):"$'\n'"$(showdiff "$d/pre.lines" "$d/span.lines")")
      cmp -s <(load1 "$d/tight.lines") <(load2 "$d/tight.lines") || differs=1
      cmp -s <(load2 "$d/tight.lines") <(load2 "$d/span.lines") || tighter=1
    fi
  fi
  if (( ${#fail[@]} )); then
    write_report "$d.report" "case $id FAIL: $arch $6" \
      "unpatched: $(q "$oracle" "${oa[@]}" --mtp "$model")" \
      "patched:   [LLAMA_ARG_MMAP_PLANNER=span] $(q "$patched" "${oa[@]}" --mtp "$model")" \
      "plan:      $(q "$ggufmap" plan "$model" --json --mtp "${pa[@]}" --planner tight --page "${page}B")" "${fail[@]}"
    echo "$id FAIL $arch $differs $tighter" >>"$work/results/r.$BASHPID"
  else
    echo "$id PASS $arch $differs $tighter $(grep -c '^MAPPED' "$d/tight.lines")" >>"$work/results/r.$BASHPID"
    rm -rf "$d"
  fi
}

# ------------------------------------------------------------------ the run
start=$SECONDS
awk '{ print NR "\t" $0 }' "$cases" >"$work/numbered.tsv"
split -n "r/$jobs" "$work/numbered.tsv" "$work/part."
for part in "$work"/part.*; do
  ( while IFS=$'\t' read -r id arch model oflags pflags desc; do
      run_case "$id" "$arch" "$model" "$oflags" "$pflags" "$desc"
    done <"$part" ) &
done
wait

# ---------------------------------------------------------------- summary
cat "$work"/results/r.* 2>/dev/null | sort -n >"$work/results.txt"
failed=0
for id in $(awk '$2 == "FAIL" { print $1 }' "$work/results.txt"); do
  cat "$work/case.$id.report"
  failed=$((failed + 1))
done
ncases=$(wc -l <"$cases")
passed=$(awk '$2 == "PASS"' "$work/results.txt" | wc -l)
(( passed + failed == ncases )) || { echo "FAIL only $((passed + failed)) of $ncases cases reported a result"; failed=$((failed + 1)); }
[[ -z $missing ]] || { echo "FAIL fixtures not written:$missing (see $work/*.maker.log)"; failed=$((failed + 1)); }
while read -r arch; do
  [[ $arch == exaone4 ]] && continue
  awk -v a="$arch" '$3 == a && $4 == 1 { found = 1 } END { exit !found }' "$work/results.txt" ||
    { echo "FAIL $arch: the MTP load never mapped other buffers than the model's: the MTP head was not tested"; failed=$((failed + 1)); }
done < <(cut -f1 "$cases" | sort -u)
ntighter=$(awk '$5 == 1' "$work/results.txt" | wc -l)
(( ntighter > 0 )) || { echo "FAIL no case where tight maps other ranges than span in the MTP load"; failed=$((failed + 1)); }
echo "plan's CPU rules: ${hostcpu:-default}; $(cut -f1 "$cases" | sort -u | wc -l) architectures, $ncases cases, $(awk '$2 == "PASS" { n += $6 } END { print n + 0 }' "$work/results.txt") patched buffers matched (tight, both loads), MTP load tighter than span in $ntighter; $((SECONDS - start)) s, $jobs jobs"
echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
