#!/usr/bin/env bash
# The CPU's extra buffer types (AMX, CPU_REPACK) under every x86 CPU variant
# of the prebuilt llama.cpp that runs on this machine, against the real
# llama.cpp v0.5.0:
#
#   cpu_variants.sh GGUFMAP_BIN FIXTURE_BIN ORACLE_BIN WORKDIR
#
# For each variant V the oracle can load here (ggufmap-oracle --cpu-variant
# V; an AMX host runs all 14, an AVX2 host the ones without AVX-512) and
# each fixture (weight types every extra type treats differently: q4_0,
# q4_1, q8_0, q2_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, f16, bf16; rows that
# CPU_REPACK takes and AMX does not; MUL_MAT_ID experts; gemma3n's 3-D
# weights), the buffer lines of `ggufmap plan --cpu V` must equal the
# oracle's, with no GPU and with a fake Metal GPU at -ngl 1.  Then the host:
# `ggufmap plan` with its default CPU (host) must name the CPU rules of the
# variant llama.cpp loads here by itself (the oracle's CPUVARIANT line), and
# plan must warn exactly when AMX takes a 3-D weight.
# Exit 1 on any mismatch or when no variant runs.
set -uo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
[[ $# -eq 4 ]] || usage
ggufmap=$1 fixture=$2 oracle=$3 work=$4
for b in "$ggufmap" "$fixture" "$oracle"; do
  [[ -x $b ]] || { echo "cpu_variants: not executable: $b"; echo "0 passed, 1 failed"; exit 1; }
done
mkdir -p "$work" && work=$(cd "$work" && pwd)
rm -rf "$work/fx" "$work/cases" && mkdir -p "$work/fx" "$work/cases"
passed=0 failed=0
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

variants=(x64 sse42 sandybridge ivybridge piledriver haswell alderlake skylakex cannonlake cascadelake icelake
          cooperlake zen4 sapphirerapids)
fixtures=(
  "llama-q4_0|--arch llama --type q4_0"
  "llama-q4_0-kv16|--arch llama --type q4_0 --n-head-kv 1"
  "llama-q4_1|--arch llama --type q4_1"
  "llama-q8_0|--arch llama --type q8_0"
  "llama-q2_K|--arch llama --type q2_K --n-embd 256 --n-ff 512"
  "llama-q4_K|--arch llama --type q4_K --n-embd 256 --n-ff 512"
  "llama-q5_K|--arch llama --type q5_K --n-embd 256 --n-ff 512 --tied"
  "llama-q6_K|--arch llama --type q6_K --n-embd 256 --n-ff 512"
  "llama-iq4_nl|--arch llama --type iq4_nl"
  "llama-iq4_xs|--arch llama --type iq4_xs --n-embd 256 --n-ff 512"
  "llama-f16|--arch llama --type f16 --n-embd 96"
  "llama-bf16|--arch llama --type bf16"
  "qwen3moe-q4_0|--arch qwen3moe --type q4_0"
  "gemma3n-q8_0|--arch gemma3n --type q8_0"
)
declare -A model
for f in "${fixtures[@]}"; do
  name=${f%%|*}
  read -r -a args <<<"${f#*|}"
  "$fixture" "${args[@]}" -o "$work/fx/$name.gguf" >/dev/null 2>"$work/fx/$name.err" ||
    { fail "fixture $name: $(head -c 300 "$work/fx/$name.err")"; continue; }
  model[$name]=$work/fx/$name.gguf
done

# one case: the buffer lines of the oracle (loading variant V) and of plan --cpu V
check() {
  local v=$1 name=$2 id=$3
  shift 3
  local d=$work/cases/$id
  mkdir -p "$d"
  local ocmd=("$oracle" --cpu-variant "$v" "$@" "${model[$name]}")
  local pcmd=("$ggufmap" plan "${model[$name]}" --format buffers --cpu "$v")
  case " $* " in *" --fake-gpu metal "*) pcmd+=(--device metal -ngl 1) ;; esac
  "${ocmd[@]}" >"$d/o.out" 2>"$d/o.err" </dev/null
  "${pcmd[@]}" >"$d/p.out" 2>"$d/p.err" </dev/null
  local prc=$?
  grep -E '^(MAPPED|ALLOC) ' "$d/o.out" >"$d/o.lines"
  grep -E '^(MAPPED|ALLOC) ' "$d/p.out" >"$d/p.lines"
  if (( prc == 0 )) && [[ -s $d/o.lines ]] && cmp -s "$d/o.lines" "$d/p.lines"; then
    passed=$((passed + 1))
    rm -rf "$d"
  else
    fail "$v $name $*: plan rc $prc"
    echo "  oracle: $(q "${ocmd[@]}")"
    echo "  plan:   $(q "${pcmd[@]}")"
    showdiff "$d/o.lines" "$d/p.lines"
  fi
}

ran=0 id=0
for v in "${variants[@]}"; do
  line=$("$oracle" --cpu-variant "$v" --list-bufts 2>/dev/null | grep '^CPUVARIANT') || { echo "$v: does not run here"; continue; }
  [[ $line == "CPUVARIANT name=$v" ]] || { fail "--cpu-variant $v loaded: $line"; continue; }
  ran=$((ran + 1))
  for name in "${!model[@]}"; do
    id=$((id + 1)); check "$v" "$name" "$id"
    id=$((id + 1)); check "$v" "$name" "$id" --fake-gpu metal --ngl 1
  done
done
(( ran > 0 )) && passed=$((passed + 1)) || fail "no CPU variant of the oracle runs on this machine"

# the host: plan's default CPU rules are those of the variant llama.cpp loads here
host_variant=$("$oracle" --list-bufts | awk '$1 == "CPUVARIANT" { sub(/^name=/, "", $2); print $2 }')
any=${model[llama-q4_0]}
want=$("$ggufmap" plan "$any" --json --cpu "$host_variant" 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
got=$("$ggufmap" plan "$any" --json 2>/dev/null | grep -o '"cpu": "[^"]*"' | head -n 1 | cut -d'"' -f4)
if [[ -n $want && $want == "$got" ]]; then
  passed=$((passed + 1))
  echo "host: llama.cpp loads $host_variant, plan's CPU rules: $got"
else
  fail "host: llama.cpp loads ${host_variant:-nothing} ($want), plan's default CPU rules are '$got'"
fi

# the warning: AMX takes gemma3n's 3-D altup_proj (q8_0), no other fixture's 3-D weight
if [[ -n ${model[gemma3n-q8_0]:-} ]]; then
  out=$("$ggufmap" plan "${model[gemma3n-q8_0]}" --cpu sapphirerapids 2>&1)
  [[ $out == *"3-D weight 'altup_proj.weight'"* ]] && passed=$((passed + 1)) ||
    fail "plan --cpu sapphirerapids does not warn of gemma3n's 3-D AMX weights"
  out=$("$ggufmap" plan "${model[gemma3n-q8_0]}" --cpu zen4 2>&1)
  [[ $out == *"3-D weight"* ]] && fail "plan --cpu zen4 warns of AMX" || passed=$((passed + 1))
fi
echo "variants run: $ran, fixtures: ${#model[@]}"
echo "$passed passed, $failed failed"
(( failed == 0 ))
