#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2294 # effect checks read variables through eval
# The seeds' named cases (/work/shared/seeds, docs/replica.md), each run in
# the real llama.cpp v0.5.0 (the oracle) and in `ggufmap plan`: the buffer
# lines must be identical, and the effect the seed states must show in them.
#
#   seeds.sh BUILD_DIR ORACLE_BIN WORKDIR [options]
#   seeds.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_BIN WORKDIR [options]
#
# options:
#   --self-test   the oracle on both sides (checks the harness and the effects;
#                 the planner checks are skipped)
#   --no-full     leave out the 103.7 GiB sparse replica (the oracle runs it with
#                 --no-populate: without, llama.cpp would populate the whole
#                 sparse mapping, minutes and all the page cache); env PLAN_SEEDS_FULL=0
#
# (a) interior per_layer_token_embd (issue 29465): the scaled replica (256 MiB
#     table) and the full qwen3.8-flash-next replica, on a Metal-like GPU with
#     every layer offloaded and on the CPU at -ngl 0; the tight planner's runs
#     around the table (347.70 + 19736.15 MiB on the full replica)
# (b) output.weight stored first, -ngl 1/2 on Metal (issue 24510): the Metal
#     span is the whole data section
# (c) -ot "^output=CPU" collapses a shard's Metal span (issue 27822)
# (d) a draft/MTP-style load, token_embd first and output last (PR 22941): the
#     Metal span is the whole file; --no-mmap allocates only the own tensors
# Output: one line per check, then "P passed, F failed".
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool_args "$@"; shift "$nargs"
selftest=0 full=${PLAN_SEEDS_FULL:-1}
while [[ $# -gt 0 ]]; do
  case $1 in
    --self-test) selftest=1 ;;
    --no-full) full=0 ;;
    *) usage ;;
  esac
  shift
done
work=$(mkdir -p "$work" && cd "$work" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work" && mkdir -p "$work/f"
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "  PASS $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL $*"; }
finish() {
  rm -rf "$work/f/full"   # the sparse replica: no disk, but 4 files of 100 GiB apparent size
  echo "$passed passed, $failed failed"
  (( failed == 0 )) && exit 0 || exit 1
}
need_plan=1
(( selftest )) && need_plan=0
for b in "$fixture" "$oracle"; do [[ -x $b ]] || { fail "not executable: $b"; finish; }; done
(( need_plan )) && { [[ -x $ggufmap ]] || { fail "not executable: $ggufmap"; finish; }; }
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }

# ---------------------------------------------------------------- fixtures
# mkfix NAME MAKER-ARGS...: writes $work/f/NAME/m.gguf (or its shards) and
# the maker's --json; sets MODEL (the first shard) and JSON.
mkfix() { local name=$1; shift; mkreplica "$name" "$@" -o "$work/f/$name/m.gguf"; }
# Replicas write NAME, NAME-0000k-of-0000n.gguf: the path comes from the json.
mkreplica() {
  local name=$1; shift
  mkdir -p "$work/f/$name"
  JSON=$work/f/$name/maker.json
  if ! "$fixture" "$@" --json >"$JSON" 2>"$work/f/$name/maker.err"; then
    fail "replica $name: $(q "$fixture" "$@") failed: $(head -c 300 "$work/f/$name/maker.err")"
    MODEL=$work/f/$name/missing.gguf
    return 1
  fi
  local p; p=$(awk 'match($0, /"path": "[^"]*"/) { print substr($0, RSTART + 9, RLENGTH - 10); exit }' "$JSON")
  [[ $p == /* ]] && MODEL=$p || MODEL=$work/f/$name/$(basename "$p")
}
# tensor JSON NAME -> "shard offset size" (empty if absent)
tensor() {
  awk -v n="\"name\": \"$2\"" 'index($0, n) {
      match($0, /"shard": [0-9]+/); s = substr($0, RSTART + 9, RLENGTH - 9)
      match($0, /"offset": [0-9]+/); o = substr($0, RSTART + 10, RLENGTH - 10)
      match($0, /"size": [0-9]+/); z = substr($0, RSTART + 8, RLENGTH - 8)
      print s, o, z; exit }' "$1"
}
# extent JSON SHARD [NAME-REGEX] -> "first last bytes": lowest offset, highest
# end and summed bytes of the shard's tensors (whose name matches)
extent() {
  awk -v sh="$2" -v re="${3:-.}" '/"name": "/ {
      match($0, /"name": "[^"]*"/); n = substr($0, RSTART + 9, RLENGTH - 10)
      match($0, /"shard": [0-9]+/); s = substr($0, RSTART + 9, RLENGTH - 9)
      match($0, /"offset": [0-9]+/); o = substr($0, RSTART + 10, RLENGTH - 10) + 0
      match($0, /"size": [0-9]+/); z = substr($0, RSTART + 8, RLENGTH - 8) + 0
      if (s != sh || n !~ re) next
      if (!k++ || o < lo) lo = o; if (o + z > hi) hi = o + z; sum += z }
    END { if (k) printf "%.0f %.0f %.0f\n", lo, hi, sum }' "$1"
}

# ---------------------------------------------------------------- comparing
# compare CASE "ORACLE ARGS" "PLAN ARGS": both on $MODEL; the oracle's lines
# go to $work/CASE.lines (the effect checks read them).
compare() {
  local c=$1 oa pa orc prc res
  read -r -a oa <<<"$2"; read -r -a pa <<<"$3"
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  local ocmd=("$oracle" "${oa[@]}" "$MODEL") pcmd=("$ggufmap" plan "$MODEL" --format buffers "${pa[@]}")
  (( selftest )) && pcmd=("$oracle" "${oa[@]}" "$MODEL")
  echo "[$c]"
  timeout 600 "${ocmd[@]}" >"$work/$c.o.out" 2>"$work/$c.o.err" </dev/null; orc=$?
  timeout 600 "${pcmd[@]}" >"$work/$c.p.out" 2>"$work/$c.p.err" </dev/null; prc=$?
  res=$(tail -n 1 "$work/$c.o.out" | awk '$1 == "RESULT" { print $2 }')
  grep -E '^(MAPPED|ALLOC) ' "$work/$c.o.out" >"$work/$c.lines"
  grep -E '^(MAPPED|ALLOC) ' "$work/$c.p.out" >"$work/$c.p.lines"
  if [[ $res == ok && $prc == 0 ]] && cmp -s "$work/$c.lines" "$work/$c.p.lines" && [[ -s $work/$c.lines ]]; then
    pass "oracle == plan, $(wc -l <"$work/$c.lines") buffer lines"
    sed 's/^/         /' "$work/$c.lines"
    return 0
  fi
  fail "oracle vs plan"
  echo "    oracle: $(q "${ocmd[@]}")   -> rc $orc, RESULT ${res:-none}"
  echo "    plan:   $(q "${pcmd[@]}")   -> rc $prc"
  echo "    buffer lines (- oracle, + plan):"
  showdiff "$work/$c.lines" "$work/$c.p.lines"
  [[ -s $work/$c.p.err ]] && echo "    plan stderr: $(head -c 600 "$work/$c.p.err" | tr '\n' ' ')"
  [[ $res != ok ]] && grep -E '^(ERR|ABORT) ' "$work/$c.o.out" | head -5 | sed 's/^/    oracle: /'
  return 1
}
# buf CASE BUFT FILE [N] -> "first last size" of the N-th (1-based) such
# MAPPED line, or "size n_tensors" of an ALLOC line when FILE is "-"
buf() {
  awk -v b="buft=$2" -v f="file=$3" -v n="${4:-1}" '
    $1 == "MAPPED" && $2 == b && $3 == f && ++k == n { split($4, x, "="); split($5, y, "="); split($6, z, "="); print x[2], y[2], z[2]; exit }
    $1 == "ALLOC" && $2 == b && f == "file=-" && ++k == n { split($3, x, "="); split($4, y, "="); print x[2], y[2]; exit }' "$work/$1.lines"
}
# check DESCRIPTION CONDITION... (a [[ ]] / (( )) expression, evaluated)
check() { local d=$1; shift; if eval "$@"; then pass "$d"; else fail "$d   [$*]"; fi; }

# tight CASE PLAN-ARGS: `plan --planner tight --json`; prints the ranges of
# every mapped buffer and leaves them in $work/CASE.tight as
# "name shard first last lazy: a-b a-b ..."
tight() {
  local c=$1 pa; read -r -a pa <<<"$2"
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  local cmd=("$ggufmap" plan "$MODEL" --planner tight --json "${pa[@]}")
  if ! timeout 600 "${cmd[@]}" >"$work/$c.tight.json" 2>"$work/$c.tight.err" </dev/null; then
    fail "tight planner: $(q "${cmd[@]}") failed: $(head -c 300 "$work/$c.tight.err")"; return 1
  fi
  if ! node -e '
    const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const b of p.buffers) if (b.mapped)
      console.log(b.name, b.shard, b.first, b.last, b.lazy ? "lazy" : "-", ":", b.ranges.map(r => r[0] + "-" + r[1]).join(" "));
  ' "$work/$c.tight.json" >"$work/$c.tight" 2>"$work/$c.tight.err"; then
    fail "tight planner JSON unreadable: $(head -c 300 "$work/$c.tight.err")"; return 1
  fi
  echo "    tight planner: $(q "${cmd[@]}")"
  awk '{ printf "      %s shard %s [%s, %s)%s:", $1, $2, $3, $4, $5 == "lazy" ? " lazy" : ""
         for (i = 7; i <= NF; i++) { split($i, r, "-"); printf " [%s, %s) %.2f MiB%s", r[1], r[2], (r[2] - r[1]) / 1048576, i < NF ? " +" : "" }
         print "" }' "$work/$c.tight"
}
# runs_of CASE NAME SHARD -> "n total a1 b1 a2 b2 ..." for the non-lazy buffer
runs_of() {
  awk -v n="$2" -v s="$3" '$1 == n && $2 == s && $5 == "-" { t = 0; o = ""
      for (i = 7; i <= NF; i++) { split($i, r, "-"); t += r[2] - r[1]; o = o " " r[1] " " r[2] }
      printf "%d %.0f%s\n", NF - 6, t, o; exit }' "$work/$1.tight"
}

# The CPU_REPACK rules of this machine (plan's default for --device cpu;
# with --device metal plan would assume arm64, the oracle runs here).
hostcpu=${PLAN_CPU:-}
if (( need_plan )) && [[ -z $hostcpu ]] && mkfix probe --arch llama; then
  hostcpu=$("$ggufmap" plan "$MODEL" --device cpu --json 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
  echo "plan's CPU rules: ${hostcpu:-default}"
fi

# ================================================================ (a)
echo "== (a) interior per_layer_token_embd (issue 29465)"
if mkreplica scaled --replica scaled --scale-bytes 256M -o "$work/f/scaled/sc.gguf"; then
  read -r _ pt0 ptn < <(tensor "$JSON" per_layer_token_embd.weight); pt1=$((pt0 + ptn))
  read -r d0 d1 _ < <(extent "$JSON" 0)
  echo "  scaled replica: table [$pt0, $pt1) $(mib "$ptn"), data [$d0, $d1)"
  if compare a.scaled.metal-all-lazy-on "--fake-gpu metal --ngl -1 --no-repack --lazy-mode on" "--device metal -ngl all -nr --lazy-mode on"; then
    read -r f l s < <(buf a.scaled.metal-all-lazy-on MTL0_Mapped 0)
    check "MTL0_Mapped [$f, $l) $(mib "$s") = the whole data section, over the CPU table" "(( f == d0 && l == d1 && f < pt0 && l > pt1 ))"
    read -r f l s < <(buf a.scaled.metal-all-lazy-on CPU_Mapped 0 2)
    check "the lazy table is its own CPU_Mapped buffer [$f, $l)" "(( f == pt0 && l == pt1 ))"
  fi
  if compare a.scaled.metal-all-lazy-off "--fake-gpu metal --ngl -1 --no-repack --lazy-mode off" "--device metal -ngl all -nr --lazy-mode off"; then
    read -r f l s < <(buf a.scaled.metal-all-lazy-off MTL0_Mapped 0)
    check "--lazy-mode off does not help: MTL0_Mapped [$f, $l) still spans the table" "(( f <= pt0 && l >= pt1 ))"
  fi
  compare a.scaled.metal-all-auto "--fake-gpu metal --ngl -1 --no-repack" "--device metal -ngl all -nr"
  if compare a.scaled.cpu-ngl0-lazy-on "--ngl 0 --no-repack --lazy-mode on" "--device cpu -ngl 0 -nr --lazy-mode on"; then
    read -r f l s < <(buf a.scaled.cpu-ngl0-lazy-on CPU_Mapped 0)
    check "CPU_Mapped [$f, $l) $(mib "$s") spans the lazy table" "(( f < pt0 && l > pt1 ))"
    if (( need_plan )) && tight a.scaled.cpu-ngl0-lazy-on "--device cpu -ngl 0 -nr --lazy-mode on"; then
      read -r n t r0 r1 r2 r3 < <(runs_of a.scaled.cpu-ngl0-lazy-on CPU_Mapped 0)
      check "tight: 2 runs around the table, span - runs = the table ($(mib $((s - ${t:-0}))))" \
        "(( n == 2 && r0 == f && r1 == pt0 && r2 == pt1 && r3 == l && s - t == ptn ))"
    fi
  fi
  compare a.scaled.cpu-ngl0 "--ngl 0" "--device cpu -ngl 0"
fi

if (( full )); then
  echo "  full replica qwen3.8-flash-next (103.7 GiB sparse; oracle with --no-populate)"
  if mkreplica full --replica qwen3.8-flash-next -o "$work/f/full/q"; then
    read -r psh pt0 ptn < <(tensor "$JSON" per_layer_token_embd.weight); pt1=$((pt0 + ptn))
    echo "  table: shard $psh [$pt0, $pt1) $(mib "$ptn")"
    if compare a.full.metal-all "--fake-gpu metal --ngl -1 --no-repack --no-populate" "--device metal -ngl all -nr"; then
      tot=0 line=""
      for k in 1 2 3; do read -r f l s < <(buf a.full.metal-all MTL0_Mapped $k); tot=$((tot + ${s:-0})); line+=" $(mib "${s:-0}")"; done
      read -r f l s < <(buf a.full.metal-all MTL0_Mapped 1)
      check "MTL0_Mapped per shard:$line = $(mib $tot) (seed: 47549.79 + 47088.71 + 11527.99 = 106166 MiB)" \
        "[[ '$line' == ' 47549.79 MiB 47088.71 MiB 11527.99 MiB' ]]"
      check "shard 2's MTL0_Mapped [$f, $l) spans the lazy table" "(( f < pt0 && l > pt1 ))"
    fi
    if compare a.full.cpu-ngl0-lazy-on "--ngl 0 --no-repack --lazy-mode on --no-populate" "--device cpu -ngl 0 -nr --lazy-mode on"; then
      read -r f l s < <(buf a.full.cpu-ngl0-lazy-on CPU_Mapped 1)
      check "shard 2's CPU_Mapped span [$f, $l) = $(mib "$s") (ours 47549.79; the seed's IQ1_S quant: 47674.92)" \
        "[[ '$(mib "$s")' == '47549.79 MiB' ]] && (( f < pt0 && l > pt1 ))"
      read -r f2 l2 s2 < <(buf a.full.cpu-ngl0-lazy-on CPU_Mapped 1 2)
      check "the lazy table buffer [$f2, $l2) = $(mib "${s2:-0}") (27465.94)" "(( f2 == pt0 && l2 == pt1 ))"
      if (( need_plan )) && tight a.full.cpu-ngl0-lazy-on "--device cpu -ngl 0 -nr --lazy-mode on"; then
        read -r n t r0 r1 r2 r3 < <(runs_of a.full.cpu-ngl0-lazy-on CPU_Mapped 1)
        a=$(mib $(( ${r1:-0} - ${r0:-0} ))) b=$(mib $(( ${r3:-0} - ${r2:-0} )))
        check "tight runs of shard 2: $a + $b (docs/replica.md: 347.70 + 19736.15; the seed's IQ1_S: 347.70 + 19861.28)" \
          "[[ '$a $b' == '347.70 MiB 19736.15 MiB' ]] && (( n == 2 ))"
        check "span - runs = $(mib $((s - ${t:-0}))) = the table, to the byte" "(( s - t == ptn ))"
      fi
    fi
    rm -rf "$work/f/full"
  fi
else
  echo "  full replica: left out (--no-full)"
fi

# ================================================================ (b)
echo "== (b) output.weight stored first, -ngl 1/2 on Metal (issue 24510)"
if mkfix b.first --arch llama --layers 4 --move output_norm.weight:first --move output.weight:first; then
  read -r d0 d1 _ < <(extent "$JSON" 0)
  read -r o0 o1 own < <(extent "$JSON" 0 '^(output|output_norm)\.weight$|^blk\.3\.')
  if compare b.first.ngl2 "--fake-gpu metal --ngl 2" "--device metal -ngl 2"; then
    read -r f l s < <(buf b.first.ngl2 MTL0_Mapped 0)
    check "-ngl 2: MTL0_Mapped [$f, $l) = the whole data section [$d0, $d1) for $own own bytes" "(( f == d0 && l == d1 && s > 3 * own ))"
  fi
  if compare b.first.ngl1 "--fake-gpu metal --ngl 1" "--device metal -ngl 1"; then
    read -r f l s < <(buf b.first.ngl1 MTL0_Mapped 0)
    read -r e0 e1 _ < <(extent "$JSON" 0 '^(output|output_norm)\.weight$')
    check "-ngl 1: the output layer is stored first and contiguous: MTL0_Mapped [$f, $l) = [$e0, $e1)" "(( f == e0 && l == e1 ))"
  fi
  if compare b.first.ngl2-attn-q-cpu "--fake-gpu metal --ngl 2 --ot blk\\.3\\.attn_q=CPU" "--device metal -ngl 2 -ot blk\\.3\\.attn_q=CPU"; then
    read -r f l s < <(buf b.first.ngl2-attn-q-cpu MTL0_Mapped 0)
    check "-ot blk.3.attn_q=CPU leaves a CPU tensor between GPU ones: MTL0_Mapped [$f, $l) unchanged" "(( f == d0 && l == d1 ))"
  fi
fi
if mkfix b.split --arch llama --layers 4 --move output.weight:first --move output_norm.weight:last; then
  read -r d0 d1 _ < <(extent "$JSON" 0)
  if compare b.split.ngl1 "--fake-gpu metal --ngl 1" "--device metal -ngl 1"; then
    read -r f l s < <(buf b.split.ngl1 MTL0_Mapped 0)
    check "-ngl 1, output.weight first and output_norm last: MTL0_Mapped [$f, $l) = the whole data section for 2 tensors" "(( f == d0 && l == d1 ))"
  fi
fi
if mkfix b.fixed --arch llama --layers 4 --move output_norm.weight:last --move output.weight:last; then
  read -r d0 d1 _ < <(extent "$JSON" 0)
  read -r g0 g1 own < <(extent "$JSON" 0 '^(output|output_norm)\.weight$|^blk\.3\.')
  if compare b.fixed.ngl2 "--fake-gpu metal --ngl 2" "--device metal -ngl 2"; then
    read -r f l s < <(buf b.fixed.ngl2 MTL0_Mapped 0)
    check "reordered (output last, 24510's fix): MTL0_Mapped [$f, $l) = the offload set's own suffix [$g0, $g1)" "(( f == g0 && l == g1 && l == d1 ))"
  fi
fi

# ================================================================ (c)
echo "== (c) -ot \"^output=CPU\" collapses a shard's Metal span (issue 27822)"
if mkfix c --arch llama --layers 8 --shards 2 --move output.weight:after=blk.3.ffn_up.weight; then
  read -r osh o0 on < <(tensor "$JSON" output.weight)
  read -r b0 b1 _ < <(extent "$JSON" 1 '^blk\.7\.')
  read -r d0 d1 _ < <(extent "$JSON" 1)
  check "layout: output.weight ($osh) and blk.7 share shard 2, CPU blocks in between" "(( osh == 1 && o0 < b0 ))"
  if compare c.before "--fake-gpu metal --ngl 2" "--device metal -ngl 2"; then
    read -r f l s < <(buf c.before MTL0_Mapped 1); sb=$s
    check "without -ot: shard 2's MTL0_Mapped [$f, $l) $(mib "$s") runs from output.weight to blk.7" "(( f == o0 && l == b1 ))"
  fi
  if compare c.after "--fake-gpu metal --ngl 2 --ot ^output=CPU" "--device metal -ngl 2 -ot ^output=CPU"; then
    read -r f l s < <(buf c.after MTL0_Mapped 1)
    check "with -ot ^output=CPU: it collapses to blk.7 alone, [$f, $l) $(mib "${s:-0}") (was $(mib "${sb:-0}"))" "(( f == b0 && l == b1 ))"
    check "and shard 1 has no MTL0_Mapped buffer left (output_norm matched too)" "[[ -z '$(buf c.after MTL0_Mapped 0)' ]]"
  fi
fi

# ================================================================ (d)
echo "== (d) draft/MTP-style load: token_embd first, output last (PR 22941)"
if mkfix d.tied --arch llama --layers 4 --tied --move output_norm.weight:last; then
  read -r d0 d1 _ < <(extent "$JSON" 0)
  read -r _ e0 en < <(tensor "$JSON" token_embd.weight); read -r _ _ nn < <(tensor "$JSON" output_norm.weight)
  if compare d.tied.ngl1 "--fake-gpu metal --ngl 1" "--device metal -ngl 1"; then
    read -r f l s < <(buf d.tied.ngl1 MTL0_Mapped 0)
    check "tied output on the GPU: MTL0_Mapped [$f, $l) = the whole data section for 2 own tensors ($((en + nn)) B)" "(( f == d0 && l == d1 ))"
  fi
  if compare d.tied.ngl1-nommap "--fake-gpu metal --ngl 1 --no-mmap" "--device metal -ngl 1 --no-mmap"; then
    read -r s n < <(buf d.tied.ngl1-nommap MTL0 -)
    check "--no-mmap (22941's fix): ALLOC MTL0 = the 2 own tensors only, $s B" "(( n == 2 && s == (en + 31) / 32 * 32 + (nn + 31) / 32 * 32 ))"
  fi
fi
if mkfix d.mtp --arch llama --layers 4 --move output.weight:last --move output_norm.weight:last; then
  read -r d0 d1 _ < <(extent "$JSON" 0)
  if compare d.mtp "--fake-gpu metal --ngl 1 --ot token_embd=MTL0" "--device metal -ngl 1 -ot token_embd=MTL0"; then
    read -r f l s < <(buf d.mtp MTL0_Mapped 0)
    check "token_embd (first) and output (last) on the GPU: MTL0_Mapped [$f, $l) = the whole data section" "(( f == d0 && l == d1 ))"
  fi
  compare d.mtp.cuda "--fake-gpu cuda --ngl 1 --ot token_embd=CUDA0" "--device cuda -ngl 1 -ot token_embd=CUDA0"
fi
finish
