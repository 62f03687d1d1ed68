#!/usr/bin/env bash
# Differential test of `ggufmap plan --format buffers` against the real
# llama.cpp v0.5.0 (the oracle): for every case, the MAPPED/ALLOC lines of
# both must be identical, order included.
#
#   differential.sh BUILD_DIR ORACLE_BIN WORKDIR [options]
#   differential.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_BIN WORKDIR [options]
#
# options:
#   --quick         every 4th case only (no minimum case count)
#   --self-test     the oracle on both sides (checks the harness itself)
#   --inject        corrupt the plan side of every 29th case
#                   (changed digit, swapped/dropped/extra line); passes only if
#                   exactly those cases are reported as mismatches
#   --jobs N        parallel workers (default 2, env PLAN_JOBS)
#   --list          print the cases and the coverage of each axis, run nothing
#   --only ID[,ID]  run only these case ids (no minimum case count)
#   --keep          keep WORKDIR/cases of passing cases (default: only failures)
#
# Case design (a covering design, not a full product): 32 fixtures (4 archs
# x 8 variants; within an arch the variants cycle shard count 1..3, alignment
# 32/64/4096, weight type, tied/untied, layer count 2..4 and tensor order
# file/reverse/shuffle/canonical/moved) x device (cpu: -ngl 0 and all; metal,
# cuda: -ngl 0, 1, 2, n_layer, all), one --no-mmap case per fixture, and 32
# cases on fixtures aligned to 8 and 16 bytes (llama.cpp aborts on a CPU
# mapping that is not 32-byte aligned: plan must refuse those, exit 2).  Per
# case a fixed-seed generator picks the override (none, a block's ffn to CPU,
# a block to the GPU, ^output=CPU, token_embd to the GPU, a comma list, two
# -ot, one of 20 ECMAScript patterns, --cpu-moe, --n-cpu-moe 1), repack on or
# off, --no-host (sometimes) and, for gemma4/qwen4exp, the lazy mode.  Every
# 16th case also checks `plan --json` against the lines (json_lines.js).
# A case where the oracle does not end in RESULT ok passes only if plan exits 2.
# Output: a report per failure (fixture command, both command lines, a diff
# naming the differing fields), then "cases: N, buffers: B matched" and
# "P passed, F failed"; exit 1 if any failed or fewer than 300 cases ran.
set -uo pipefail
export LC_ALL=C

# ---------------------------------------------------------------- arguments
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool_args "$@"; shift "$nargs"
quick=0 selftest=0 inject=0 jobs=${PLAN_JOBS:-2} listonly=0 only="" keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --self-test) selftest=1 ;;
    --inject) inject=1 ;;
    --jobs) jobs=$2; shift ;;
    --list) listonly=1 ;;
    --only) only=$2; shift ;;
    --keep) keep=1 ;;
    *) usage ;;
  esac
  shift
done

for b in "$fixture" "$oracle"; do
  [[ -x $b ]] || { echo "differential: not executable: $b"; echo "0 passed, 1 failed"; exit 1; }
done
if (( ! selftest )) && [[ ! -x $ggufmap ]]; then
  echo "differential: not executable: $ggufmap"; echo "0 passed, 1 failed"; exit 1
fi
work=$(mkdir -p "$work" && cd "$work" && pwd)
rm -rf "$work/fixtures" "$work/cases" "$work/results" && mkdir -p "$work/fixtures" "$work/cases" "$work/results"

# ---------------------------------------------------------------- generator
# Park-Miller minimal standard generator: exact in any shell/awk, so the case
# list is the same everywhere.  rnd N -> $R in [0, N).
rng=20240611
rnd() { rng=$(( rng * 16807 % 2147483647 )); R=$(( rng % $1 )); }

archs=(llama qwen3moe gemma4 qwen4exp)
types=(q4_0 f32 q8_0 q4_K q4_0 f16 iq4_nl bf16)
aligns=(32 64 4096)
nvar=8

# -ot patterns in llama.cpp's regex dialect (std::regex ECMAScript, searched
# unanchored): @ is the GPU's buffer type (CPU without a GPU).  No commas
# inside a pattern: llama.cpp splits -ot on them.
regexes=(
  'blk\.\d\.ffn_(gate|up)\.weight$=CPU'
  '^blk\.(0|1)\.attn_=@'
  '\d\.attn_[qkv]\.=CPU'
  'exps=CPU'
  '[^0-9]norm=@'
  'blk\.1\.=CPU,blk\.=@'
  '(?:output|token_embd)\.weight$=@'
  'ffn_.{2}\.weight=CPU'
  'BLK=CPU'
  'attn_(q|k)_norm|ssm_=@'
  '\bffn=CPU'
  'blk\.[^0]\.=@'
  '^token_embd\.weight$=@'
  '.*_exps\.weight=@'
  '(up|down)_exps=CPU,\.ffn_gate_inp=@'
  '^(?!blk)=@'
  'norm\.weight$=@'
  'blk\.(\d)\.attn_q\.weight=@'
  'at+n_o=CPU'
  '_(exps|shexp)\b=@'
)
fixlist=$work/fixtures.tsv caselist=$work/cases.tsv
: >"$fixlist"; : >"$caselist"
declare -A fix_layers fix_arch fix_path
nfix=0 ncase=0

add_fixture() { # KEY ARCH LAYERS SHARDS ARGS...
  local key=$1 arch=$2 layers=$3 shards=$4; shift 4
  local path=$work/fixtures/$key/m.gguf
  [[ $shards -gt 1 ]] && path=$work/fixtures/$key/m-00001-of-0000$shards.gguf
  fix_layers[$key]=$layers fix_arch[$key]=$arch fix_path[$key]=$path
  printf '%s\t%s\n' "$key" "$*" >>"$fixlist"
  nfix=$((nfix + 1))
}

# add_case FIXKEY DEVICE NGL EXTRA  (EXTRA: "override,repack,lazy,nohost,nommap")
add_case() {
  local key=$1 dev=$2 ngl=$3 nommap=$4 force=${5:-}
  local arch=${fix_arch[$key]} nl=${fix_layers[$key]}
  local gpu="" oa=() pa=("--device" "$dev") desc="$key dev=$dev ngl=$ngl"
  case $dev in metal) gpu=MTL0; oa+=(--fake-gpu metal) ;; cuda) gpu=CUDA0; oa+=(--fake-gpu cuda) ;; esac
  if [[ $ngl == all ]]; then oa+=(--ngl -1); pa+=(-ngl all); else oa+=(--ngl "$ngl"); pa+=(-ngl "$ngl"); fi
  # override: candidates depend on device and arch
  local cand=(none none ffn_cpu out_cpu regex regex two_ot)
  [[ -n $gpu ]] && cand+=(blk_gpu embd_gpu combo)
  [[ $arch == qwen3moe || $arch == qwen4exp ]] && cand+=(cpu_moe n_cpu_moe)
  rnd ${#cand[@]}; local ov=${cand[$R]}
  [[ -n $force ]] && ov=$force
  rnd "$nl"; local blk=$R
  case $ov in
    ffn_cpu) oa+=(--ot "blk\\.$blk\\.ffn=CPU"); pa+=(-ot "blk\\.$blk\\.ffn=CPU") ;;
    out_cpu) oa+=(--ot "^output=CPU"); pa+=(-ot "^output=CPU") ;;
    blk_gpu) oa+=(--ot "blk\\.$blk\\.=$gpu"); pa+=(-ot "blk\\.$blk\\.=$gpu") ;;
    embd_gpu) oa+=(--ot "token_embd=$gpu"); pa+=(-ot "token_embd=$gpu") ;;
    combo) oa+=(--ot "blk\\.$blk\\.ffn_(up|down)=CPU,token_embd=$gpu"); pa+=(-ot "blk\\.$blk\\.ffn_(up|down)=CPU,token_embd=$gpu") ;;
    regex) rnd ${#regexes[@]}; local re=${regexes[$R]}; re=${re//@/${gpu:-CPU}}
           oa+=(--ot "$re"); pa+=(-ot "$re"); ov+="#$R" ;;
    two_ot) oa+=(--ot "token_embd=${gpu:-CPU}" --ot ".=CPU"); pa+=(-ot "token_embd=${gpu:-CPU}" -ot ".=CPU") ;;
    cpu_moe) oa+=(--cpu-moe); pa+=(--cpu-moe) ;;
    n_cpu_moe) oa+=(--n-cpu-moe 1); pa+=(--n-cpu-moe 1) ;;
  esac
  desc+=" ot=$ov"
  rnd 2; if (( R )); then oa+=(--no-repack); pa+=(-nr); desc+=" repack=off"; else desc+=" repack=on"; fi
  if [[ $arch == gemma4 || $arch == qwen4exp ]]; then
    rnd 3; local modes=(on off auto) lz; lz=${modes[$R]}
    oa+=(--lazy-mode "$lz"); pa+=(--lazy-mode "$lz"); desc+=" lazy=$lz"
  fi
  rnd 6; if (( R == 0 )); then oa+=(--no-host); pa+=(--no-host); desc+=" no-host"; fi
  if (( nommap )); then oa+=(--no-mmap); pa+=(--no-mmap); desc+=" no-mmap"; fi
  ncase=$((ncase + 1))
  printf '%d\t%s\t%s\t%s\t%s\n' "$ncase" "$key" "${oa[*]}" "${pa[*]}" "$desc" >>"$caselist"
}

for ai in "${!archs[@]}"; do
  arch=${archs[$ai]}
  for ((v = 0; v < nvar; v++)); do
    shards=$((1 + v % 3))
    align=${aligns[$(( (v + v / 3 + ai) % 3 ))]}
    type=${types[$(( (v + 2 * ai) % ${#types[@]} ))]}
    tied=$(( (v + ai) % 2 ))
    layers=$(( 2 + (2 * v + ai) % 3 ))
    args=(--arch "$arch" --type "$type" --layers "$layers" --shards "$shards" --alignment "$align" --seed $((v + 1)))
    case $type in *_K|iq4_xs) args+=(--n-embd 256 --n-ff 512) ;; esac
    (( tied )) && args+=(--tied)
    case $(( (v + 3 * ai) % 6 )) in
      0) ;;
      1) args+=(--order reverse) ;;
      2) args+=(--order "shuffle:$((v * 7 + ai + 1))") ;;
      3) args+=(--order canonical) ;;
      4) if (( tied )); then args+=(--move token_embd.weight:mid); else args+=(--move output.weight:first); fi ;;
      5) args+=(--order "shuffle:$((v + 11 * ai))")
         if [[ $arch == gemma4 || $arch == qwen4exp ]]; then args+=(--move per_layer_token_embd.weight:mid)
         else args+=(--move output_norm.weight:first); fi ;;
    esac
    (( v == 5 )) && args+=(--embd-type q8_0)
    (( v == 6 && ! tied )) && args+=(--output-type q4_0)
    key=$arch-v$v
    add_fixture "$key" "$arch" "$layers" "$shards" "${args[@]}"
  done
done

for ((i = 0; i < nvar; i++)); do
  for ai in "${!archs[@]}"; do
    key=${archs[$ai]}-v$i nl=${fix_layers[${archs[$ai]}-v$i]}
    add_case "$key" cpu 0 0
    add_case "$key" cpu all 0
    for dev in metal cuda; do
      nn=$nl; (( nl == 2 )) && nn=3   # 2 is already in the list: use n_layer+1
      for ngl in 0 1 2 "$nn" all; do add_case "$key" "$dev" "$ngl" 0; done
    done
    devs=(cpu metal cuda); rnd 3; d=${devs[$R]}
    ngls=(0 1 2 "$nl" all); rnd 5
    add_case "$key" "$d" "${ngls[$R]}" 1
  done
done

# Alignments below 32: llama.cpp asserts that a CPU buffer made from a host
# pointer is 32-byte aligned (ggml-backend.cpp), so CPU_Mapped spans that
# start off 32 abort the load; Metal-like mappings do not care.  Here the
# oracle refuses some cases, and plan must refuse them too (exit 2).
for ai in "${!archs[@]}"; do
  arch=${archs[$ai]}
  for align in 8 16; do
    key=$arch-a$align
    add_fixture "$key" "$arch" 2 $(( align == 8 ? 1 : 2 )) --arch "$arch" --type q8_0 --layers 2 \
      --shards $(( align == 8 ? 1 : 2 )) --alignment "$align" --seed $((ai + 3)) --order "shuffle:$((ai + align))"
    add_case "$key" cpu 0 0 none
    add_case "$key" metal all 0 none
    add_case "$key" metal all 0 embd_gpu
    add_case "$key" cuda 1 0
  done
done

if (( listonly )); then
  cat "$fixlist"; echo; cat "$caselist"; echo
  echo "fixtures: $nfix, cases: $ncase"
  awk -F'\t' '{ n = split($5, w, " "); for (i = 2; i <= n; i++) { split(w[i], kv, "="); c[kv[1] "=" (kv[2] == "" ? "yes" : kv[2])]++ } }
    END { for (k in c) print "  " k ": " c[k] }' "$caselist" | sort
  awk -F'\t' '{ split($2, a, "\t"); n = split($2, w, " "); for (i = 1; i < n; i++) if (w[i] ~ /^--(shards|alignment|type|order)$/) c[w[i] " " w[i+1]]++; if ($2 ~ /--tied/) c["--tied"]++; if ($2 ~ /--move/) c["--move"]++ }
    END { for (k in c) print "  fixture " k ": " c[k] }' "$fixlist" | sort
  exit 0
fi

# ---------------------------------------------------------------- selection
has_fake=0
"$oracle" --help 2>&1 | grep -q -- '--fake-gpu' && has_fake=1
sel=$work/selected.tsv
awk -F'\t' -v quick="$quick" -v only=",$only," -v st="$selftest" -v hf="$has_fake" '
  only != ",," { if (index(only, "," $1 ",")) print; next }
  st && !hf && $3 ~ /--fake-gpu/ { skipped++; next }
  quick && ($1 % 4) != 1 { next }
  { print }
  END { if (skipped) print "differential: oracle has no --fake-gpu: self-test skips " skipped " GPU cases" > "/dev/stderr" }' "$caselist" >"$sel"
nsel=$(wc -l <"$sel")

# ---------------------------------------------------------------- fixtures
fail_fix=""
needed=$(cut -f2 "$sel" | sort -u | tr "\n" " ")
while IFS=$'\t' read -r key fargs; do
  [[ " $needed " == *" $key "* ]] || continue
  read -r -a fa <<<"$fargs"
  mkdir -p "$work/fixtures/$key"
  out=$work/fixtures/$key/m.gguf
  if ! "$fixture" "${fa[@]}" -o "$out" >"$work/fixtures/$key/maker.log" 2>&1; then
    fail_fix+=" $key"
  fi
done <"$fixlist"

# The CPU_REPACK rules of the machine the oracle runs on: plan's default
# for --device cpu (with --device metal it would assume arm64).
hostcpu=${PLAN_CPU:-}
if [[ -z $hostcpu ]] && (( ! selftest )); then
  for p in "${fix_path[@]}"; do
    [[ -f $p ]] || continue
    hostcpu=$("$ggufmap" plan "$p" --device cpu --json 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
    break
  done
  [[ -n $hostcpu ]] || echo "differential: cannot tell plan's CPU rules for this machine; using its defaults"
fi

# ---------------------------------------------------------------- one case

# corrupt FILE KIND: the injected mismatches of --inject
corrupt() {
  local f=$1 kind=$2 n
  n=$(wc -l <"$f")
  case $kind in
    0) awk 'NR == 1 { if (match($0, /size=[0-9]+/)) { v = substr($0, RSTART + 5, RLENGTH - 5); $0 = substr($0, 1, RSTART + 4) (v + 1) substr($0, RSTART + RLENGTH) } } { print }' "$f" >"$f.t" ;;
    1) if (( n >= 2 )); then awk 'NR == 1 { h = $0; next } { print } NR == 2 { print h }' "$f" >"$f.t"; else awk '{ print } END { print "ALLOC buft=CPU size=32 n_tensors=1" }' "$f" >"$f.t"; fi ;;
    2) if (( n >= 2 )); then awk 'NR != 2' "$f" >"$f.t"; else : >"$f.t"; fi ;;
    3) awk '{ print } END { print "MAPPED buft=CPU_Mapped file=0 first=0 last=32 size=32 max_tensor=32" }' "$f" >"$f.t" ;;
  esac
  mv "$f.t" "$f"
}

run_case() { # the fields of a case line
  local id=$1 key=$2 oargs=$3 pargs=$4 desc=$5
  local d=$work/cases/$id model=${fix_path[$key]} oa pa orc prc ores status note=""
  mkdir -p "$d"
  read -r -a oa <<<"$oargs"
  read -r -a pa <<<"$pargs"
  local ocmd=("$oracle" "${oa[@]}" "$model")
  [[ -n $hostcpu ]] && pa+=(--cpu "$hostcpu")
  local pcmd=("$ggufmap" plan "$model" --format buffers "${pa[@]}")
  (( selftest )) && pcmd=("$oracle" "${oa[@]}" "$model")
  if [[ ! -f $model ]]; then
    status=FAIL note="fixture was not written (see $work/fixtures/$key/maker.log)"
    : >"$d/o.lines"; : >"$d/p.lines"; orc=- prc=- ores=-
  else
    timeout 120 "${ocmd[@]}" >"$d/o.out" 2>"$d/o.err" </dev/null; orc=$?
    timeout 120 "${pcmd[@]}" >"$d/p.out" 2>"$d/p.err" </dev/null; prc=$?
    if (( selftest )) && (( prc != 0 )); then prc=2; fi
    ores=$(tail -n 1 "$d/o.out" | awk '$1 == "RESULT" { print $2 }')
    grep -E '^(MAPPED|ALLOC) ' "$d/o.out" >"$d/o.lines"
    grep -E '^(MAPPED|ALLOC) ' "$d/p.out" >"$d/p.lines"
    if (( inject && id % 29 == 0 )); then
      corrupt "$d/p.lines" $(( (id / 29) % 4 )); note="injected mismatch, kind $(( (id / 29) % 4 ))"
    fi
    classify "$ores" "$prc" "$orc" "$d/o.lines" "$d/p.lines"
    note=${cnote:-$note}
  fi
  local nb; nb=$(wc -l <"$d/o.lines")
  if [[ $status == FAIL || -n $note ]]; then
    {
      echo "--- case $id $status: $desc${note:+  [$note]}"
      echo "  fixture: $(q "$fixture") $(awk -F'\t' -v k="$key" '$1 == k { print $2 }' "$fixlist") -o $(q "$work/fixtures/$key/m.gguf")"
      echo "  oracle:  $(q "${ocmd[@]}")   -> rc $orc, RESULT ${ores:-none}"
      echo "  plan:    $(q "${pcmd[@]}")   -> rc $prc"
      if [[ $status == FAIL ]]; then
        echo "  buffer lines (- oracle, + plan):"
        showdiff "$d/o.lines" "$d/p.lines"
        [[ -s $d/p.err ]] && echo "  plan stderr: $(head -c 600 "$d/p.err" | tr '\n' ' ')"
        [[ $ores != ok ]] && grep -E '^(ERR|ABORT) ' "$d/o.out" | head -5 | sed 's/^/  oracle: /'
      fi
    } >"$d.report"
  fi
  # JSON cross-check on a sample: plan --json's buffers must say the same
  if [[ $status == PASS && $ores == ok ]] && (( ! selftest && id % 16 == 5 )) && command -v node >/dev/null; then
    local jcmd=("$ggufmap" plan "$model" --json "${pa[@]}")
    if ! timeout 120 "${jcmd[@]}" >"$d/p.json" 2>"$d/pj.err" </dev/null; then
      status=FAIL
      { echo "--- case $id FAIL: $desc  [plan --json failed]"; echo "  plan:    $(q "${jcmd[@]}")"; head -c 600 "$d/pj.err"; } >"$d.report"
    elif ! node "$here/json_lines.js" "$d/p.json" "$d/p.lines" >"$d/json.diff" 2>&1; then
      status=FAIL
      { echo "--- case $id FAIL: $desc  [plan --json disagrees with --format buffers]"
        echo "  plan:    $(q "${jcmd[@]}")"; sed 's/^/    /' "$d/json.diff"; } >"$d.report"
    else
      echo "$id" >>"$work/results/json.$BASHPID"
    fi
  fi
  echo "$id $status $nb" >>"$work/results/r.$BASHPID"
  if [[ $status == PASS ]] && (( ! keep )); then rm -rf "$d"; fi
}

start=$SECONDS
# Split the selected cases round-robin over the workers.
for ((w = 0; w < jobs; w++)); do
  awk -v w="$w" -v j="$jobs" '(NR - 1) % j == w' "$sel" >"$work/sel.$w"
  ( worker_rr() { local id key oargs pargs desc
      while IFS=$'\t' read -r id key oargs pargs desc; do run_case "$id" "$key" "$oargs" "$pargs" "$desc"; done; }
    worker_rr <"$work/sel.$w" ) &
done
wait

# ---------------------------------------------------------------- summary
cat "$work"/results/r.* 2>/dev/null | sort -n >"$work/results.txt"
ran=$(wc -l <"$work/results.txt")
passed=$(awk '$2 == "PASS"' "$work/results.txt" | wc -l)
failed=$(awk '$2 == "FAIL"' "$work/results.txt" | wc -l)
bufs=$(awk '$2 == "PASS" { s += $3 } END { print s + 0 }' "$work/results.txt")
njson=$(cat "$work"/results/json.* 2>/dev/null | wc -l)
nreport=0
for id in $(awk '{ print $1 }' "$work/results.txt"); do
  if [[ -f $work/cases/$id.report ]]; then
    nreport=$((nreport + 1))
    if (( nreport <= 150 )); then cat "$work/cases/$id.report"; fi
  fi
done
(( nreport > 150 )) && echo "... $((nreport - 150)) more reports in $work/cases/*.report"
[[ -n $fail_fix ]] && echo "fixtures the maker could not write:$fail_fix"
echo "plan's CPU rules: ${hostcpu:-default}"
echo "fixtures: $nfix, cases selected: $nsel, ran: $ran, JSON cross-checked: $njson, $((SECONDS - start)) s, $jobs jobs"
echo "cases: $ran, buffers: $bufs matched"
rc=0
if (( inject )); then
  want=$(awk '$1 % 29 == 0 { n++ } END { print n + 0 }' "$sel")
  caught=$(awk '$2 == "FAIL" && $1 % 29 == 0' "$work/results.txt" | wc -l)
  echo "inject: $want mismatches injected, $caught caught, $((failed - caught)) other failures"
  if (( caught == want && failed == caught && want > 0 )); then
    echo "$((ran)) passed, 0 failed"; exit 0
  fi
  echo "$((ran - failed)) passed, $failed failed"; exit 1
fi
echo "$passed passed, $failed failed"
(( failed > 0 )) && rc=1
if (( ran < nsel )); then echo "differential: only $ran of $nsel selected cases reported a result"; rc=1; fi
if (( quick == 0 )) && [[ -z $only ]] && (( ran < 300 )); then echo "differential: fewer than 300 cases ran"; rc=1; fi
exit $rc
