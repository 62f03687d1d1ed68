#!/usr/bin/env bash
# oracle.sh - the regex corpus against the real llama.cpp (libstdc++ side).
#
# usage: oracle.sh GGUFMAP FIXTURE ORACLE DRIVER PATTERNS WORKDIR
# On a qwen3moe fixture with 24 layers (291 tensors, shuffled), for each
# corpus pattern P the prebuilt llama.cpp loads with
#   --fake-gpu metal --ngl 0 --no-repack --ot P=MTL0 -t
# so exactly the tensors that std::regex_search finds land in MTL0_Mapped
# (the TENSOR lines say which), a refused pattern fails the load, and a
# pattern libstdc++ cannot finish runs past the time limit (2 s; then 60 s
# more unless ggufmap reports the step budget, since llama.cpp compiles the
# pattern per tensor and a{99993} takes it 14 s).  The same is
# asked of
#   ggufmap plan --device metal -ngl 0 -nr --regex libstdc++ -ot P=MTL0
#     --format buffers
# which must print the oracle's buffer lines, fail with "invalid regex"
# (exit 1) where the load fails, and with "step_budget" where it hangs;
# and regex-driver's answer on the fixture's tensor names must be the
# oracle's MTL0 membership, tensor by tensor.  Patterns holding ',' or '='
# are skipped: llama.cpp's -ot splits its argument there, so they cannot
# reach std::regex (probe.cpp checks them).  Last line: "N passed, M failed".
set -euo pipefail
# Bytes, not characters: a pattern may hold any byte (a lone 0xc3 would
# swallow the newline after it in a UTF-8 locale).
export LC_ALL=C
if [[ $# -ne 6 ]]; then
  echo "usage: oracle.sh GGUFMAP FIXTURE ORACLE DRIVER PATTERNS WORKDIR" >&2
  exit 2
fi
ggufmap=$1 fixture=$2 oracle=$3 driver=$4 patterns=$5 work=$6
limit=${ORACLE_SECONDS:-2} slow_limit=${ORACLE_SLOW_SECONDS:-60}
mkdir -p "$work"
model=$work/q24.gguf
[[ -f $model ]] || "$fixture" --arch qwen3moe --layers 24 --order shuffle:3 -o "$model" >/dev/null

# The tensor names, in the oracle's TENSOR order, as a names file.
"$oracle" -t "$model" >"$work/base.txt"
awk '/^TENSOR / { for (i = 2; i <= NF; i++) if ($i ~ /^name=/) print "N " substr($i, 6) }' "$work/base.txt" >"$work/names.txt"
n_names=$(wc -l <"$work/names.txt")
[[ $n_names -gt 100 ]] || { echo "oracle.sh: only $n_names tensors in the baseline load" >&2; exit 1; }

# The patterns that can be passed through -ot, decoded.
: >"$work/usable.txt"
: >"$work/usable-index.txt"
i=0 skipped=0
while IFS= read -r line; do
  [[ $line == "P "* || $line == "X "* ]] || continue
  p=${line:2}
  [[ $line == "X "* ]] && p=$(printf '%b' "$p")
  if [[ $p == *,* || $p == *=* || $p == *$'\n'* ]]; then
    skipped=$((skipped + 1))
  else
    printf 'P %s\n' "$p" >>"$work/usable.txt"
    echo "$i" >>"$work/usable-index.txt"
  fi
  i=$((i + 1))
done <"$patterns"
"$driver" libstdc++ "$work/usable.txt" "$work/names.txt" >"$work/driver.out"

run_oracle() {
  timeout "$1" "$oracle" --fake-gpu metal --ngl 0 --no-repack --ot "$p=MTL0" -t "$model" >"$work/o.txt" 2>/dev/null </dev/null
  orc=$?
}
pass=0 fail=0 k=0
declare -A outcome
bad() { fail=$((fail + 1)); printf 'pattern %s: %q: %s\n' "$1" "$2" "$3"; }
while IFS= read -r line <&3; do
  p=${line:2}
  idx=$(sed -n "$((k + 1))p" "$work/usable-index.txt")
  ours=$(sed -n "$((k + 1))p" "$work/driver.out" | cut -d' ' -f2-)
  k=$((k + 1))
  set +e
  "$ggufmap" plan "$model" --device metal -ngl 0 -nr --regex libstdc++ -ot "$p=MTL0" --format buffers \
    >"$work/g.txt" 2>"$work/g.err" </dev/null
  grc=$?
  run_oracle "$limit"
  # Slow is not endless: llama.cpp compiles the pattern once per tensor, and
  # a{99993} (100000 NFA states) or .*.*.*.*.*x take it 5-15 s on 291
  # tensors.  Wait longer unless ggufmap says the search never ends.
  if [[ $orc == 124 ]] && ! grep -q step_budget "$work/g.err"; then run_oracle "$slow_limit"; fi
  set -e
  if [[ $orc == 124 ]]; then
    outcome[hang]=$((${outcome[hang]:-0} + 1))
    if [[ $grc == 1 ]] && grep -q step_budget "$work/g.err"; then pass=$((pass + 1)); else
      bad "$idx" "$p" "llama.cpp does not finish in ${limit}s; ggufmap plan: exit $grc $(head -c 300 "$work/g.err")"; fi
  elif grep -q '^RESULT fail' "$work/o.txt"; then
    outcome[refused]=$((${outcome[refused]:-0} + 1))
    if [[ $grc == 1 ]] && grep -q "invalid regex" "$work/g.err" && [[ $ours == reject* ]]; then pass=$((pass + 1)); else
      bad "$idx" "$p" "llama.cpp refuses it ($(grep -m1 '^ERR' "$work/o.txt")); ggufmap plan: exit $grc $(head -c 300 "$work/g.err"); driver: $ours"; fi
  elif grep -q '^RESULT ok' "$work/o.txt"; then
    outcome[loaded]=$((${outcome[loaded]:-0} + 1))
    bits=$(awk -v N="$work/names.txt" '
      /^MAPPED |^ALLOC / { if ($2 == "buft=MTL0_Mapped") gpu = nbuf + 0; nbuf++ }
      /^TENSOR / { for (i = 2; i <= NF; i++) { if ($i ~ /^buf=/) b = substr($i, 5); if ($i ~ /^name=/) nm = substr($i, 6) }
                   on[nm] = (b == gpu && gpu != "") ? 1 : 0 }
      END { while ((getline l < N) > 0) printf "%s", on[substr(l, 3)]; print "" }' gpu="" "$work/o.txt")
    if [[ $grc != 0 ]]; then
      bad "$idx" "$p" "llama.cpp loads it; ggufmap plan: exit $grc $(head -c 300 "$work/g.err")"
    elif ! diff -q <(grep -E '^(MAPPED|ALLOC) ' "$work/o.txt") "$work/g.txt" >/dev/null; then
      bad "$idx" "$p" "buffers differ: llama.cpp $(grep -E '^(MAPPED|ALLOC) ' "$work/o.txt" | tr '\n' ';') ggufmap $(tr '\n' ';' <"$work/g.txt")"
    elif [[ "ok $bits" != "$ours" ]]; then
      bad "$idx" "$p" "tensors in MTL0: llama.cpp $bits, regex-driver ${ours#ok }"
    else
      pass=$((pass + 1))
    fi
  else
    bad "$idx" "$p" "oracle: exit $orc, $(tail -1 "$work/o.txt")"
  fi
done 3<"$work/usable.txt"
echo "oracle.sh: $k patterns through -ot ($skipped skipped for ',' or '='): ${outcome[loaded]:-0} loaded, ${outcome[refused]:-0} refused, ${outcome[hang]:-0} do not finish"
[[ $k -gt 0 ]] || fail=$((fail + 1))
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
