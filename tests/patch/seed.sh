#!/usr/bin/env bash
# Proof 3 of the llama.cpp patch: the seed case, mapped and wired.
#
#   seed.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_DIR WORKDIR
#
# (a) The Qwen3.8-Flash-Next replica (`ggufmap-fixture --replica
#     qwen3.8-flash-next`: 4 shards, 103.7 GiB, sparse) on the fake Metal
#     device with -ngl all: the patched llama.cpp maps exactly the ranges of
#     `ggufmap plan --planner tight`, and its MTL0_Mapped buffers, rounded
#     out to 16 KiB pages as ggml_metal_buffer_map wires them, add up to the
#     plan's working set (`plan --device metal`); the unpatched build's add
#     up to the plan's figure for today's llama.cpp, 106,166.53 MiB, the one
#     issue 29465 reports.  (The oracle runs with --no-populate: llama.cpp
#     would otherwise fault in 100 GiB of holes.)
# (b) Wired for real: a scaled replica (one shard, a 256 MiB CPU-side lazy
#     table between GPU-side tensors) loaded with load mode mmap_mlock, which
#     the patch applies to each mapped range of a non-lazy context: the
#     kernel's VmLck (tests/patch/probe.c reads it while the model is loaded)
#     equals the union of those ranges rounded to this system's pages, for
#     the default planner (tight) and for span.
# Output: "ok"/"FAIL" per check, then "P passed, F failed"; exit 1 on any
# failure.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
proof_args 4 "$@"
probe=$patched_dir/bin/probe.so
rm -rf "${work:?}"/*
page=$(getconf PAGESIZE)
passed=0 failed=0
check() { # TEXT CONDITION
  if eval "$2"; then echo "ok   $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi
}
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }

# run NAME PLANNER ORACLE ARGS...: $work/NAME.out, $work/NAME.lines (buffers)
run() {
  local name=$1
  oracle_run "$work/$name" "${@:2}" ||
    echo "  $name: $(q "${@:3}") did not load: $(grep -E '^(ERR|ABORT|RESULT)' "$work/$name.out" | head -3 | tr '\n' ' ')"
}

# resident NAME BUFT PAGE: the bytes of NAME's BUFT buffers, each rounded out to PAGE
resident() {
  awk -v buft="$2" -v p="$3" '$1 == "MAPPED" && $2 == "buft=" buft {
      split($4, f, "="); split($5, l, "="); s += (int((l[2] + p - 1) / p) - int(f[2] / p)) * p }
    END { printf "%.0f\n", s }' "$work/$1.lines"
}

# plan_json NAME ARGS...: ggufmap plan --json into $work/NAME.json
plan_json() { local name=$1; shift; "$ggufmap" plan "$@" --json >"$work/$name.json" 2>"$work/$name.err"; }

# json EXPR FILE: a value of a plan document (node)
json() { node -e "const j = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); console.log($1)" "$2"; }

# ================================================================ (a)
echo "== (a) Qwen3.8-Flash-Next replica, fake Metal, -ngl all"
mkdir -p "$work/q"
if ! "$fixture" --replica qwen3.8-flash-next -o "$work/q/q" >"$work/q/maker.log" 2>&1; then
  check "the replica is written: $(head -c 300 "$work/q/maker.log")" false
else
  model=$work/q/q-00001-of-00004.gguf
  oargs=(--fake-gpu metal --ngl -1 --no-repack --no-populate)
  pargs=(--device metal -ngl all -nr)
  run q.unpatched default "$oracle" "${oargs[@]}" "$model"
  run q.tight default "$patched" "${oargs[@]}" "$model"
  plan_json q.plan4k "$model" "${pargs[@]}" --planner tight --page "${page}B"
  plan_json q.plan "$model" "${pargs[@]}"
  node "$here/range_lines.js" "$work/q.plan4k.json" "$work/q.want" && grep -v '^EXPECT ' "$work/q.want" >"$work/q.want.lines"
  check "the patched build maps the plan's ranges, to the byte ($(grep -c '^MAPPED' "$work/q.tight.lines") buffers)" \
    "[[ -s $work/q.tight.lines ]] && cmp -s $work/q.want.lines $work/q.tight.lines"
  cmp -s "$work/q.want.lines" "$work/q.tight.lines" || showdiff "$work/q.want.lines" "$work/q.tight.lines"
  llama=$(json 'j.working_set.llama' "$work/q.plan.json") planned=$(json 'j.working_set.planned' "$work/q.plan.json")
  got_tight=$(resident q.tight MTL0_Mapped 16384) got_span=$(resident q.unpatched MTL0_Mapped 16384)
  check "patched llama.cpp: MTL0_Mapped $(mib "$got_tight") wired (16 KiB pages) = the tight plan's working set $(mib "$planned")" \
    "[[ $got_tight == $planned ]]"
  check "unpatched llama.cpp: MTL0_Mapped $(mib "$got_span") = the plan's figure for today's llama.cpp $(mib "$llama") = 106166.53 MiB" \
    "[[ $got_span == $llama && '$(mib "$got_span")' == '106166.53 MiB' ]]"
  echo "  saved: $(mib $((got_span - got_tight))), $(awk -v a="$got_span" -v b="$got_tight" 'BEGIN { printf "%.2fx", a / b }') less wired"
fi
rm -rf "$work/q"

# ================================================================ (b)
echo "== (b) scaled replica, 256 MiB lazy table, load mode mmap_mlock: VmLck"
# CAP_IPC_LOCK (bit 14; root has it) lifts RLIMIT_MEMLOCK
limit=$(ulimit -l) cap=$(awk '$1 == "CapEff:" { print $2 }' /proc/self/status)
if (( ! (0x${cap:-0} >> 14 & 1) )) && [[ $limit != unlimited ]] && (( limit < 300 * 1024 )); then
  check "mlock limit: RLIMIT_MEMLOCK is $limit kB without CAP_IPC_LOCK; run as root or raise it (ulimit -l) to wire 300 MiB" false
elif ! "$fixture" --replica scaled --scale-bytes 256M -o "$work/sc.gguf" >"$work/sc.maker.log" 2>&1; then
  check "the scaled replica is written: $(head -c 300 "$work/sc.maker.log")" false
else
  oargs=(--load-mode mmap_mlock --fake-gpu metal --ngl -1 --no-repack --lazy-mode on)
  pargs=(--device metal -ngl all -nr --lazy-mode on --page "${page}B")
  # the union of the non-lazy mapped ranges, page-rounded: what mlock wires
  wired='{ const r = []; for (const b of j.buffers) if (b.mapped && !b.lazy) for (const [f, l] of b.ranges)
            r.push([Math.floor(f / p) * p, Math.ceil(l / p) * p]);
          r.sort((a, b) => a[0] - b[0]); let s = 0, e = -1;
          for (const [f, l] of r) { if (f > e) { s += l - f; e = l } else if (l > e) { s += l - e; e = l } } return s / 1024 }'
  for planner in default span; do
    run "sc.$planner" "$planner" env LD_PRELOAD="$probe" "$patched" "${oargs[@]}" "$work/sc.gguf"
    plan_json "sc.$planner.plan" "$work/sc.gguf" "${pargs[@]}" --planner "${planner/default/tight}"
    want=$(json "((p) => $wired)($page)" "$work/sc.$planner.plan.json")
    got=$(sed -n 's/^PROBE vmlck_kb=\([0-9]*\) .*/\1/p' "$work/sc.$planner.out")
    check "patched, planner $planner: VmLck ${got:-none} kB = the plan's wired bytes ${want:-none} kB" \
      "[[ -n '$got' && '$got' == '$want' ]]"
    eval "vmlck_$planner=\${got:-0}"
  done
  run sc.unpatched default env LD_PRELOAD="$probe" "$oracle" "${oargs[@]}" "$work/sc.gguf"
  echo "  unpatched llama.cpp: VmLck $(sed -n 's/^PROBE vmlck_kb=\([0-9]*\) .*/\1/p' "$work/sc.unpatched.out") kB (it locks each file up to its last mapped tensor)"
  check "tight wires less than span (${vmlck_default:-0} kB < ${vmlck_span:-0} kB)" "(( vmlck_default < vmlck_span ))"
fi
echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
