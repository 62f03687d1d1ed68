#!/usr/bin/env bash
# Several GPUs (issue 18.3): `ggufmap plan` and `ggufmap fit` against the real
# llama.cpp v0.5.0 with 1, 2 and 4 fake devices of the oracle (tests/oracle:
# --fake-gpus N registers CUDA0..CUDAn-1 or MTL0..MTLn-1, each with its own
# buffer types, as ggml-cuda registers every GPU).  Per configuration:
#   - the weight buffers: plan's MAPPED/ALLOC lines equal llama.cpp's, per
#     device, order included;
#   - the context: every KV, recurrent-state and output buffer per device to
#     the byte, every compute buffer per device exact where fit says exact and
#     never below where it says bound (lib.sh's comparison), llama.cpp's
#     refusals alike;
#   - the JSON lists every device of the run.
# Configurations: -dev lists of 1, 2 and 4 GPUs in order and reversed, -ts,
# -sm none with -mg, -ot to each device, -nkvo, partial -ngl, flash attention
# off, op offload off, fake Metal and fake CUDA, on architectures with an
# exact graph (llama, qwen3moe, gemma4, qwen35) and one with a bound; and
# pipeline parallelism (the fake devices say async and events as CUDA and
# Metal do, so llama.cpp turns it on with every layer on several GPUs) and
# each condition that turns it off; then every architecture of
# `ggufmap-fixture --list-archs` in four multi-GPU configurations.
#
# usage: tests/fit/multi_gpu.sh GGUFMAP FIXTURE ORACLE WORKDIR
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: multi_gpu.sh GGUFMAP FIXTURE ORACLE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v node >/dev/null || { echo "FAIL: node not found (scripts/deps.sh installs nodejs)" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

make_fixture() {
  local name=$1
  shift
  "$FIXTURE" "$@" -o "$WORK/$name.gguf" >/dev/null || { echo "FAIL: fixture $name: $*" >&2; exit 1; }
}
make_fixture L --arch llama --type q4_0 --layers 6
make_fixture M --arch qwen3moe --type q8_0 --layers 5
make_fixture G --arch gemma4 --layers 6
make_fixture Q --arch qwen35 --layers 4
make_fixture B --arch gemma3n --layers 4

# shellcheck source=tests/fit/lib.sh
. "$HERE/lib.sh"

n_plan=0 n_devices_listed=0 n_gpu_sets=0
# placement_only ARGS...: the placement flags among fit's (plan takes no context flags)
placement_only() {
  while [ $# -gt 0 ]; do
    case $1 in
      --device|-ngl|-ts|--limit|-sm|-mg|-ot|--n-cpu-moe) printf '%s\n' "$1" "$2"; shift ;;
      -c|-np|-ctk|-ctv|-fa|-ub|-b) shift ;;
    esac
    shift
  done
}
# weights NAME FIXTURE ARGS...: plan's buffer lines against the oracle's, and
# every GPU of -dev in the fit's device list; then the context (lib.sh check)
weights() {
  local name=$1 fx=$2
  shift 2
  local model="$WORK/$fx.gguf" dir="$WORK/w-$name" oargs pargs
  mkdir -p "$dir"
  mapfile -t oargs < <(to_oracle "$@")
  mapfile -t pargs < <(placement_only "$@")
  "$GGUFMAP" plan "$model" "${pargs[@]}" -nr --format buffers >"$dir/plan.lines" 2>"$dir/plan.err"
  local prc=$?
  "$ORACLE" --no-repack "${oargs[@]}" "$model" >"$dir/oracle.out" 2>&1
  grep -E '^(MAPPED|ALLOC) ' "$dir/oracle.out" >"$dir/oracle.lines"
  n_cases=$((n_cases + 1)) n_plan=$((n_plan + 1))
  if [ $prc -ne 0 ] || [ ! -s "$dir/oracle.lines" ] || ! cmp -s "$dir/plan.lines" "$dir/oracle.lines"; then
    fails+=("$name ($fx $*): plan's weights differ from llama.cpp's (plan exit $prc):
$(diff "$dir/plan.lines" "$dir/oracle.lines" | head -8)")
    n_fail=$((n_fail + 1))
    return
  fi
  # plan's working set per GPU (JSON working_set.gpus) is llama.cpp's weights on it (a CUDA GPU's
  # weights are allocated: their sizes; Metal's are mapped spans, page-aligned, compared above)
  if [[ " $* " == *" --device CUDA"* ]]; then
    local per
    per=$("$GGUFMAP" plan "$model" "${pargs[@]}" -nr --json 2>/dev/null | node -e '
      const p = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const real = {};
      for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) {
        const m = l.match(/^ALLOC buft=(CUDA\d+) size=(\d+)/);
        if (m) real[m[1]] = (real[m[1]] || 0) + +m[2];
      }
      const bad = p.working_set.gpus.filter((g) => g.llama !== (real[g.device] || 0) || g.planned !== g.llama);
      const sum = p.working_set.gpus.reduce((a, g) => a + g.llama, 0);
      if (p.working_set.gpus.length > 1 && sum !== p.working_set.llama) bad.push({sum});
      console.log(bad.length ? JSON.stringify(bad) + " real " + JSON.stringify(real) : "ok")' "$dir/oracle.out")
    if [ "$per" != ok ]; then
      fails+=("$name ($fx $*): plan's per-GPU working set differs from llama.cpp's weights: $per")
      n_fail=$((n_fail + 1))
      return
    fi
    n_gpu_sets=$((n_gpu_sets + 1))
  fi
  # the fit's JSON lists the run's GPUs, in -dev's order, after the host
  local want="" got i j
  for ((i = 1; i <= $#; i++)); do [ "${!i}" = --device ] && { j=$((i + 1)); want=${!j}; }; done
  got=$("$GGUFMAP" fit "$model" "$@" -nr --json 2>/dev/null | node -e '
    const f = JSON.parse(require("fs").readFileSync(0, "utf8"));
    console.log(f.devices.filter((d) => d.gpu).map((d) => d.name).join(","))')
  case $want in
    *[0-9]*)
      if [[ " $* " != *" -sm none "* && "$got" != "$want"* ]]; then
        fails+=("$name: fit lists the GPUs '$got', -dev says '$want'"); n_fail=$((n_fail + 1)); return
      fi
      n_devices_listed=$((n_devices_listed + 1)) ;;
  esac
  rm -rf "$dir"
  check "$name" "$fx" "$@"
}

for dev in CUDA0 CUDA0,CUDA1 CUDA0,CUDA1,CUDA2,CUDA3 MTL0,MTL1; do
  tag=${dev//,/-}
  for fx in L M G Q B; do
    weights "$tag-$fx-all" "$fx" --device "$dev" -ngl all -c 2048
    weights "$tag-$fx-ngl3" "$fx" --device "$dev" -ngl 3 -c 2048 -np 2
  done
  weights "$tag-L-nkvo" L --device "$dev" -ngl all -c 4096 -nkvo -fa off
  weights "$tag-M-fa-off" M --device "$dev" -ngl 4 -c 1024 -fa off
  weights "$tag-L-no-op-offload" L --device "$dev" -ngl 4 -c 1024 --no-op-offload
  weights "$tag-G-ngl1" G --device "$dev" -ngl 1 -c 2048
done
# the order of -dev, -ts, -sm none and -mg
weights rev2-L L --device CUDA1,CUDA0 -ngl all -c 2048
for fx in L M G; do
  weights "ts31-$fx" "$fx" --device CUDA0,CUDA1 -ts 3,1 -ngl all -c 2048
  weights "ts1211-$fx" "$fx" --device CUDA0,CUDA1,CUDA2,CUDA3 -ts 1,2,1,1 -ngl all -c 2048
  weights "rev4-$fx" "$fx" --device CUDA3,CUDA2,CUDA1,CUDA0 -ngl 5 -c 2048
  weights "none-mg1-$fx" "$fx" --device CUDA0,CUDA1 -sm none -mg 1 -ngl all -c 2048
  weights "metal-ts-$fx" "$fx" --device MTL0,MTL1 -ts 1,3 -ngl all -c 2048
done
# no -ts: llama.cpp splits by each GPU's free memory, ggufmap by --limit
for fx in L M G; do
  weights "free13-$fx" "$fx" --device CUDA0,CUDA1 --limit CUDA0=1000M,CUDA1=3000M -ngl all -c 2048
  weights "free-rev-$fx" "$fx" --device CUDA2,CUDA0,CUDA1 --limit CUDA0=24G,CUDA1=12G,CUDA2=80G -ngl 5 -c 2048
  weights "free-metal-$fx" "$fx" --device MTL0,MTL1 --limit MTL0=3G,MTL1=1G -ngl all -c 2048
done
weights free-ts-wins L --device CUDA0,CUDA1 --limit CUDA0=1000M,CUDA1=3000M -ts 1,1 -ngl all -c 2048
# -ot to each device
for d in 0 1 2 3; do
  weights "ot-CUDA$d" L --device CUDA0,CUDA1,CUDA2,CUDA3 -ngl 4 -ot "blk\\.0\\.=CUDA$d" -c 2048
done
weights ot-mtl1 M --device MTL0,MTL1 -ngl 2 -ot "token_embd=MTL1" -c 2048
weights ot-cpu L --device CUDA0,CUDA1 -ngl all -ot "blk\\.[23]\\.ffn=CPU" -c 2048
# pipeline parallelism (four copies of every input) exactly when llama.cpp turns it on: several GPUs,
# n_gpu_layers > n_layer_all (L has 6 layers: -ngl 7 is every layer and the output, -ngl 6 is not),
# -sm layer, the KV cache offloaded, no override (--n-cpu-moe is one)
weights pp-ngl7 L --device CUDA0,CUDA1 -ngl 7 -c 4096
weights pp-ngl6 L --device CUDA0,CUDA1 -ngl 6 -c 4096
weights pp-ngl99 L --device CUDA0,CUDA1,CUDA2 -ngl 99 -c 4096 -np 3
weights pp-ncmoe M --device CUDA0,CUDA1 -ngl all --n-cpu-moe 1 -c 2048
weights pp-ub L --device CUDA0,CUDA1 -ngl all -c 8192 -ub 256 -b 1024
weights pp-q8 M --device CUDA0,CUDA1,CUDA2,CUDA3 -ngl all -c 8192 -ctk q8_0 -ctv q8_0 -fa on

# every architecture the fixture maker builds, on several GPUs: pipeline parallelism (2 CUDA, every
# layer), -ts 1,3 at a longer context, a partial offload, 3 Metal devices without flash attention
mapfile -t ARCHS < <("$FIXTURE" --list-archs | awk 'NR > 1 { print $1 }')
[ "${#ARCHS[@]}" -ge 46 ] || { echo "FAIL: ggufmap-fixture lists ${#ARCHS[@]} architectures, want 46" >&2; exit 1; }
for a in "${ARCHS[@]}"; do
  layers=(--layers 4)
  case $a in nemotron_h*) layers=(--layers 3) ;; esac
  make_fixture "arch-$a" --arch "$a" "${layers[@]}"
  e=()
  case $a in bert*|nomic-bert*|t5encoder*) e=(--embedding) ;; esac   # pooled: the oracle runs them with embeddings
  check "$a-pp" "arch-$a" --device CUDA0,CUDA1 -ngl all -c 2048 "${e[@]}"
  check "$a-ts13" "arch-$a" --device CUDA0,CUDA1 -ts 1,3 -ngl all -c 4096 -fa on "${e[@]}"
  check "$a-part" "arch-$a" --device CUDA0,CUDA1 -ngl 3 -c 1024 -np 2 "${e[@]}"
  check "$a-mtl3" "arch-$a" --device MTL0,MTL1,MTL2 -ngl all -c 1024 -fa off "${e[@]}"
done

# plan --limit per device: each GPU judged against its own (exit 3 when one exceeds)
plan_rc() {
  local want=$1
  shift
  "$GGUFMAP" plan "$WORK/L.gguf" -nr --no-picture "$@" >"$WORK/plan.out" 2>&1
  local rc=$?
  n_cases=$((n_cases + 1))
  [ $rc -eq "$want" ] || { fails+=("plan $*: exit $rc, want $want"); n_fail=$((n_fail + 1)); }
}
plan_rc 0 --device CUDA0,CUDA1 -ngl all --limit CUDA0=1G,CUDA1=1G
plan_rc 3 --device CUDA0,CUDA1 -ngl all -ts 1,1 --limit CUDA0=1G,CUDA1=1K
plan_rc 3 --device CUDA0,CUDA1 -ngl all -ts 1,1 --limit 1K,CUDA1=1G
# without -ts the layers follow the limits (llama.cpp: the free memory): all on CUDA0
plan_rc 0 --device CUDA0,CUDA1 -ngl all --limit CUDA0=1G,CUDA1=1K
plan_rc 0 --device CUDA0,CUDA1 -sm none -mg 1 -ngl all --limit CUDA0=1K,CUDA1=1G
plan_rc 1 --device CUDA0,CUDA1 --limit CUDA2=1G
grep -q 'EXCEEDS' "$WORK/plan.out" && { fails+=("plan usage error printed a verdict"); n_fail=$((n_fail + 1)); }
# -sm row: refused, naming why (Metal: llama.cpp's own refusal, as the oracle's; CUDA: its split buffer type
# is not modelled)
plan_rc 1 --device CUDA0,CUDA1 -sm row -ngl all
grep -q 'CUDA_Split' "$WORK/plan.out" || { fails+=("-sm row on CUDA: the refusal does not name CUDA_Split"); n_fail=$((n_fail + 1)); }
plan_rc 1 --device MTL0,MTL1 -sm row -ngl all
"$ORACLE" --no-repack --fake-gpu metal --fake-gpus 2 --dev MTL0,MTL1 --sm row --ngl all "$WORK/L.gguf" >"$WORK/row.out" 2>&1
want=$(grep -o 'device MTL0 does not support split buffers' "$WORK/row.out")
if [ -z "$want" ] || ! grep -qF "$want" "$WORK/plan.out"; then
  fails+=("-sm row on Metal: plan says '$(head -c 200 "$WORK/plan.out")', llama.cpp '$want'"); n_fail=$((n_fail + 1))
fi

echo "plan: $n_plan configurations, weights equal per device ($n_gpu_sets per-GPU working sets); fit: $n_devices_listed device lists checked"
report "multi_gpu"
