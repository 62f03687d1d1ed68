#!/usr/bin/env bash
# Every architecture the fixture maker builds, planned by `ggufmap plan
# --format buffers` and loaded by the real llama.cpp v0.5.0 (the oracle):
# every buffer line must be identical, order included.
#
#   archs.sh BUILD_DIR ORACLE_BIN WORKDIR [options]
#   archs.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_BIN WORKDIR [options]
#
# options:
#   --jobs N        parallel workers (default 2, env PLAN_JOBS)
#   --only A[,A]    these architectures only (no minimum count)
#   --table FILE    also write the per-architecture result table (markdown)
#   --keep          keep the case folders of passing cases
#   --inject        corrupt the plan side of every 37th case (one digit); passes
#                   only if exactly those cases fail (checks the harness)
#
# Per architecture (ggufmap-fixture --list-archs), four fixtures: A, 4 blocks
# of q4_0 weights in llama.cpp's creation order; B, A's weights with
# output.weight moved first (output_norm.weight where the arch has no
# output.weight); C, q8_0 in 2 shards with token_embd.weight in the middle;
# and for the archs with an MTP (NextN) block, T, tied (no output.weight, so
# the MTP head's output is token_embd at the start of the file: issue 22941's
# shape).  Cases: CPU with repack on and off, -ot, --cpu-moe; the fake Metal
# GPU at -ngl 0, 1, 3 (half) and all, with -ot, --cpu-moe and --no-mmap;
# B at -ngl all and 1; C on the CPU, at -ngl 3 and on the fake CUDA GPU; and
# with --mtp (both loads: the model's, then "LOAD mtp" and the MTP head's)
# on A, C and T.  A case passes when the oracle and plan print the same lines,
# or when both refuse the file.  Output: a report per failure, a line per
# architecture, "cases: N, buffers: B matched", "P passed, F failed"; exit 1
# on any failure or when fewer than 40 architectures ran.
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool_args "$@"; shift "$nargs"
jobs=${PLAN_JOBS:-2} only="" table="" keep=0 inject=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --jobs) jobs=$2; shift ;;
    --only) only=$2; shift ;;
    --table) table=$2; shift ;;
    --keep) keep=1 ;;
    --inject) inject=1 ;;
    *) usage ;;
  esac
  shift
done
for b in "$ggufmap" "$fixture" "$oracle"; do
  [[ -x $b ]] || { echo "archs: not executable: $b"; echo "0 passed, 1 failed"; exit 1; }
done
work=$(mkdir -p "$work" && cd "$work" && pwd)
rm -rf "$work/fix" "$work/cases" "$work/results" && mkdir -p "$work/fix" "$work/cases" "$work/results"

# ---------------------------------------------------------------- fixtures
# arch -> extras column of --list-archs ("mtp", "cls", "-")
declare -A extras
while read -r a e _; do extras[$a]=$e; done < <("$fixture" --list-archs | tail -n +2)
archs=()
for a in $("$fixture" --list-archs | tail -n +2 | awk '{ print $1 }'); do
  [[ -z $only || ",$only," == *",$a,"* ]] && archs+=("$a")
done

make_fixture() { # ARCH KEY ARGS...: writes WORK/fix/ARCH/KEY/m.gguf; prints its path or nothing
  local arch=$1 key=$2; shift 2
  local d=$work/fix/$arch/$key
  mkdir -p "$d"
  if "$fixture" --arch "$arch" "$@" -o "$d/m.gguf" >"$d/maker.log" 2>&1; then
    ls "$d"/m*.gguf | head -n 1
  fi
}

cases=$work/cases.tsv
: >"$cases"
ncase=0
add() { # ARCH FIXTURE-PATH "ORACLE FLAGS" "PLAN FLAGS" DESC
  ncase=$((ncase + 1))
  # "-" for no flags: read splits on tabs and would merge empty fields
  printf '%d\t%s\t%s\t%s\t%s\t%s\n' "$ncase" "$1" "$2" "${3:--}" "${4:--}" "$5" >>"$cases"
}
missing_fix=""
for arch in "${archs[@]}"; do
  A=$(make_fixture "$arch" A --layers 4 --type q4_0 --seed 1)
  B=$(make_fixture "$arch" B --layers 4 --type q4_0 --seed 2 --move output.weight:first)
  [[ -n $B ]] || B=$(make_fixture "$arch" B2 --layers 4 --type q4_0 --seed 2 --move output_norm.weight:first)
  [[ -n $B ]] || B=$(make_fixture "$arch" B3 --layers 4 --type q4_0 --seed 2 --move token_embd.weight:last)
  C=$(make_fixture "$arch" C --layers 4 --type q8_0 --seed 3 --shards 2 --move token_embd.weight:mid)
  for f in A B C; do [[ -n ${!f} ]] || missing_fix+=" $arch/$f"; done
  if [[ -n $A ]]; then
    add "$arch" "$A" "" "" "A cpu"
    add "$arch" "$A" "--no-repack" "-nr" "A cpu -nr"
    add "$arch" "$A" "--ot blk\\.1\\.=CPU" "-ot blk\\.1\\.=CPU" "A cpu -ot"
    add "$arch" "$A" "--cpu-moe" "--cpu-moe" "A cpu --cpu-moe"
    for ngl in 0 1 3 all; do
      o=$ngl; [[ $ngl == all ]] && o=-1
      add "$arch" "$A" "--fake-gpu metal --ngl $o" "--device metal -ngl $ngl" "A metal -ngl $ngl"
    done
    add "$arch" "$A" "--fake-gpu metal --ngl -1 --ot blk\\.1\\.=CPU,token_embd=MTL0" \
        "--device metal -ngl all -ot blk\\.1\\.=CPU,token_embd=MTL0" "A metal -ngl all -ot"
    add "$arch" "$A" "--fake-gpu metal --ngl -1 --cpu-moe" "--device metal -ngl all --cpu-moe" "A metal --cpu-moe"
    add "$arch" "$A" "--fake-gpu metal --ngl 3 --no-mmap" "--device metal -ngl 3 --no-mmap" "A metal --no-mmap"
  fi
  if [[ -n $B ]]; then
    add "$arch" "$B" "--fake-gpu metal --ngl -1" "--device metal -ngl all" "B (output first) metal -ngl all"
    add "$arch" "$B" "--fake-gpu metal --ngl 1" "--device metal -ngl 1" "B (output first) metal -ngl 1"
  fi
  if [[ -n $C ]]; then
    add "$arch" "$C" "" "" "C (token_embd mid, 2 shards) cpu"
    add "$arch" "$C" "--fake-gpu metal --ngl 3" "--device metal -ngl 3" "C metal -ngl 3"
    add "$arch" "$C" "--fake-gpu cuda --ngl 2" "--device cuda -ngl 2" "C cuda -ngl 2"
  fi
  if [[ ${extras[$arch]} == *mtp* ]]; then
    # where llama.cpp requires output.weight, A has it near the start already
    T=$(make_fixture "$arch" T --layers 4 --type q4_0 --seed 4 --tied)
    [[ -n $T ]] || T=$A
    [[ -n $A ]] && add "$arch" "$A" "--mtp" "--mtp" "A cpu --mtp"
    [[ -n $A ]] && add "$arch" "$A" "--fake-gpu metal --ngl -1 --mtp" "--device metal -ngl all --mtp" "A metal -ngl all --mtp"
    [[ -n $C ]] && add "$arch" "$C" "--fake-gpu metal --ngl 3 --mtp" "--device metal -ngl 3 --mtp" "C metal -ngl 3 --mtp"
    if [[ -n $T ]]; then
      add "$arch" "$T" "--fake-gpu metal --ngl 2 --mtp" "--device metal -ngl 2 --mtp" "T (tied) metal -ngl 2 --mtp"
    else
      missing_fix+=" $arch/T"
    fi
  fi
done

# The CPU_REPACK rules of this machine for --device cpu (plan's default);
# the fake Metal cases run on this CPU too, so they use the same rules.
hostcpu=${PLAN_CPU:-}
if [[ -z $hostcpu ]]; then
  any=$(awk -F'\t' 'NR == 1 { print $3 }' "$cases")
  [[ -n $any ]] && hostcpu=$("$ggufmap" plan "$any" --json 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
fi

# ---------------------------------------------------------------- one case
run_case() {
  local id=$1 arch=$2 model=$3 oargs=$4 pargs=$5 desc=$6
  local d=$work/cases/$id oa pa orc prc ores status note=""
  mkdir -p "$d"
  [[ $oargs == - ]] && oargs=""
  [[ $pargs == - ]] && pargs=""
  read -r -a oa <<<"$oargs"
  read -r -a pa <<<"$pargs"
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  local ocmd=("$oracle" "${oa[@]}" "$model") pcmd=("$ggufmap" plan "$model" --format buffers "${pa[@]}")
  timeout 120 "${ocmd[@]}" >"$d/o.out" 2>"$d/o.err" </dev/null; orc=$?
  timeout 120 "${pcmd[@]}" >"$d/p.out" 2>"$d/p.err" </dev/null; prc=$?
  ores=$(tail -n 1 "$d/o.out" | awk '$1 == "RESULT" { print $2 }')
  grep -E '^(MAPPED|ALLOC|LOAD) ' "$d/o.out" >"$d/o.lines"
  grep -E '^(MAPPED|ALLOC|LOAD) ' "$d/p.out" >"$d/p.lines"
  if (( inject && id % 37 == 0 )); then sed -i '1s/size=\([0-9]*\)[0-9]/size=\1x/' "$d/p.lines"; fi
  classify "$ores" "$prc" "$orc" "$d/o.lines" "$d/p.lines"
  note=$cnote
  if [[ $status == FAIL ]]; then
    {
      echo "--- case $id FAIL: $arch $desc${note:+  [$note]}"
      echo "  oracle: $(q "${ocmd[@]}")   -> rc $orc, RESULT ${ores:-none}"
      echo "  plan:   $(q "${pcmd[@]}")   -> rc $prc"
      echo "  buffer lines (- oracle, + plan):"
      showdiff "$d/o.lines" "$d/p.lines"
      [[ -s $d/p.err ]] && echo "  plan stderr: $(head -c 600 "$d/p.err" | tr '\n' ' ')"
      grep -E '^(ERR|ABORT) ' "$d/o.out" | head -5 | sed 's/^/  oracle: /'
    } >"$d.report"
  fi
  echo "$id $arch $status $(grep -c -E '^(MAPPED|ALLOC)' "$d/o.lines")" >>"$work/results/r.$BASHPID"
  if [[ $status == PASS ]] && (( ! keep )); then rm -rf "$d"; fi
}

start=$SECONDS
for ((w = 0; w < jobs; w++)); do
  ( while IFS=$'\t' read -r id arch model oargs pargs desc; do
      (( (id - 1) % jobs == w )) && run_case "$id" "$arch" "$model" "$oargs" "$pargs" "$desc"
    done <"$cases" ) &
done
wait

# ---------------------------------------------------------------- summary
cat "$work"/results/r.* 2>/dev/null | sort -n >"$work/results.txt"
for f in "$work"/cases/*.report; do [[ -f $f ]] && cat "$f"; done
[[ -n $missing_fix ]] && echo "fixtures the maker could not write:$missing_fix"
ran=$(wc -l <"$work/results.txt")
failed=$(awk '$3 == "FAIL"' "$work/results.txt" | wc -l)
bufs=$(awk '$3 == "PASS" { s += $4 } END { print s + 0 }' "$work/results.txt")
summary=$work/per-arch.txt
awk -v extras="$(for a in "${archs[@]}"; do printf '%s=%s ' "$a" "${extras[$a]}"; done)" '
  BEGIN { n = split(extras, e, " "); for (i = 1; i <= n; i++) { split(e[i], kv, "="); ex[kv[1]] = kv[2]; order[i] = kv[1] } na = n }
  { c[$2]++; if ($3 == "PASS") p[$2]++; b[$2] += ($3 == "PASS") ? $4 : 0 }
  END { for (i = 1; i <= na; i++) { a = order[i]; printf "%s %d %d %d %s\n", a, c[a], p[a] + 0, b[a] + 0, ex[a] } }' \
  "$work/results.txt" >"$summary"
awk '{ printf "  %-16s %3d cases, %3d equal, %4d buffers%s\n", $1, $2, $3, $4, ($5 ~ /mtp/ ? "  (with --mtp)" : "") }' "$summary"
if [[ -n $table ]]; then
  {
    echo "| architecture | cases | equal | buffers compared | MTP (--mtp) |"
    echo "| --- | --- | --- | --- | --- |"
    awk '{ printf "| `%s` | %d | %d | %d | %s |\n", $1, $2, $3, $4, ($5 ~ /mtp/ ? "yes" : "-") }' "$summary"
  } >"$table"
fi
good=$(awk '$2 > 0 && $2 == $3' "$summary" | wc -l)
echo "plan's CPU rules: ${hostcpu:-default}; $((SECONDS - start)) s, $jobs jobs"
echo "architectures: ${#archs[@]}, all cases equal: $good"
echo "cases: $ran, buffers: $bufs matched"
echo "$((ran - failed)) passed, $failed failed"
rc=0
if (( inject )); then
  want=$(awk '$1 % 37 == 0' "$work/results.txt" | wc -l)
  caught=$(awk '$3 == "FAIL" && $1 % 37 == 0' "$work/results.txt" | wc -l)
  echo "inject: $want corrupted, $caught caught, $((failed - caught)) other failures"
  (( want > 0 && caught == want && failed == caught )) && exit 0
  exit 1
fi
(( failed > 0 )) && rc=1
(( ran < ncase )) && { echo "archs: only $ran of $ncase cases reported a result"; rc=1; }
[[ -n $missing_fix ]] && rc=1
if [[ -z $only ]] && (( good < 40 )); then echo "archs: fewer than 40 architectures with every case equal"; rc=1; fi
exit $rc
