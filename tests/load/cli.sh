#!/usr/bin/env bash
# `ggufmap load` on the placements that allocate (issue 13, item 4): the
# tensors of allocated contexts (CPU_REPACK, --no-mmap, a GPU type that
# copies) are read into buffers of their own before the pages outside the
# planned ranges are released, as llama.cpp's load_all_data does, so every
# tensor resolves and the command exits 0:
#   - a q4_0 llama model with the default flags and with --cpu x86 (its
#     matrices go to CPU_REPACK), --device metal -ngl 2, --no-mmap, --device
#     cuda; a q4_0 MoE model with --device metal --n-cpu-moe 1;
#   - the bytes read in, in the report (text and JSON), equal the plan's own
#     account: the sizes of the tensors of every allocated context;
#   - --json goes through the library's JSON writer: a model path with a
#     quote, a backslash and a newline still gives a document node parses.
#   cli.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3
. "$(dirname "$0")/../repack/lib.sh" # ok, bad, summary; a fresh $work

"$fixture" --arch llama --type q4_0 --layers 4 -o "$work/q4.gguf" >/dev/null || bad "fixture q4_0"
"$fixture" --arch qwen3moe --type q4_0 -o "$work/moe.gguf" >/dev/null || bad "fixture qwen3moe"

# "WANT GOT FAILED" from plan --json (PLAN) and load --json (LOAD): the bytes
# of the allocated contexts' tensors by the plan's account, the bytes load
# read into allocated buffers, and the tensors that did not resolve.
compare() { node -e '
  const fs = require("fs"), p = JSON.parse(fs.readFileSync(process.argv[1], "utf8")),
        l = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  let b = 0;
  for (const t of p.tensors) for (const c of t.contexts) if (!p.contexts[c].mapped) b += t.size;
  console.log(b, l.allocated.copied_bytes, l.tensors.failed);' "$1" "$2"; }

check_load() { # MODEL PLACEMENT...: exit 0, all resolved, the bytes read in; true when some were
  local label="load $*"
  "$ggufmap" load "$@" >"$work/out" 2>"$work/err"; local st=$?
  [[ $st == 0 ]] && ok || bad "$label: exit $st: $(head -c 400 "$work/err")"
  grep -q ', 0 failed$' "$work/out" && ok || bad "$label: $(grep '^tensors' "$work/out")"
  "$ggufmap" load "$@" --json >"$work/load.json" 2>"$work/err" && ok || bad "$label --json failed"
  "$ggufmap" plan "$@" --json >"$work/plan.json" 2>"$work/err" && ok || bad "plan $*: $(cat "$work/err")"
  local want got failed_n
  read -r want got failed_n < <(compare "$work/plan.json" "$work/load.json")
  [[ -n $want && $got == "$want" ]] && ok || bad "$label: $got bytes read into allocated buffers, the plan says $want"
  [[ $failed_n == 0 ]] && ok || bad "$label: JSON says $failed_n tensors failed"
  echo "$label: $got bytes of allocated contexts read in"
  [[ ${want:-0} -gt 0 ]]
}
check_load "$work/q4.gguf"
check_load "$work/q4.gguf" --cpu x86 && ok || bad "--cpu x86 made no CPU_REPACK tensor: the test proves nothing"
grep -q '^allocated: 1 buffer, .* 28 tensors' "$work/out" && ok || bad "the text report: $(grep '^allocated' "$work/out")"
check_load "$work/q4.gguf" --device metal -ngl 2 --cpu x86 && ok || bad "metal -ngl 2: nothing allocated"
check_load "$work/q4.gguf" --no-mmap && ok || bad "--no-mmap: nothing allocated"
check_load "$work/q4.gguf" --device cuda && ok || bad "cuda: nothing allocated"
check_load "$work/moe.gguf" --device metal --n-cpu-moe 1 && ok || bad "--n-cpu-moe 1: nothing allocated"

# --json with a path that JSON must escape
odd=$work/'we"ird\pa
th.gguf'
cp "$work/q4.gguf" "$odd"
"$ggufmap" load "$odd" --json >"$work/odd.json" 2>"$work/err" && ok || bad "load of an odd path: $(cat "$work/err")"
model=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).model)' "$work/odd.json")
[[ $model == "$odd" ]] && ok || bad "the model path did not survive JSON: $(head -c 300 "$work/odd.json")"

summary
