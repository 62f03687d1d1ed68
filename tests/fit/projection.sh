#!/usr/bin/env bash
# ggufmap fit beside llama.cpp's own projection (ggufmap-projection:
# common_get_device_memory_data, the estimate behind llama.cpp's --fit) on
# the same fixtures and placements; prints docs/fit.md's table.
#
# usage: tests/fit/projection.sh GGUFMAP FIXTURE PROJECTION ORACLE WORKDIR
#
# Per configuration and device: what llama.cpp really holds once the context
# exists and has decoded a full batch (the oracle: mapped or allocated
# weights, context buffers, compute, the output buffer grown to n_batch
# rows), fit's prediction of it, and llama.cpp's projection.  Checked: fit's
# total equals llama.cpp's real total on every row whose buffers are all
# exact, and is not below it where a compute buffer is an upper bound
# (weights from the oracle's MAPPED/ALLOC lines, which tests/plan checks
# against plan); the projection's context equals fit's KV + recurrent
# state, its compute equals fit's exact compute or is not above fit's bound
# (they are llama.cpp's own numbers for those).  The errors against the
# real total are printed, not checked: that is the point of the table.
set -uo pipefail

[ $# -eq 5 ] || { echo "usage: projection.sh GGUFMAP FIXTURE PROJECTION ORACLE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 PROJECTION=$3 ORACLE=$4 WORK=$5
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"

"$FIXTURE" --arch llama --layers 4 --n-embd 256 --n-head 4 --n-head-kv 2 -o "$WORK/llama.gguf" >/dev/null &&
"$FIXTURE" --arch qwen3moe --layers 3 --head-dim 64 --move output.weight:first -o "$WORK/qwen3moe.gguf" >/dev/null &&
"$FIXTURE" --arch gemma4 --layers 6 --head-dim 64 -o "$WORK/gemma4.gguf" >/dev/null &&
"$FIXTURE" --arch qwen4exp --layers 4 --head-dim 64 -o "$WORK/qwen4exp.gguf" >/dev/null || { echo "FAIL: fixtures" >&2; exit 1; }
for a in qwen2 deepseek2 gemma3 qwen35 mamba2 gpt-oss; do
  "$FIXTURE" --arch "$a" --layers 3 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 256 -o "$WORK/$a.gguf" >/dev/null ||
    { echo "FAIL: fixture $a" >&2; exit 1; }
done

n_fail=0
echo "| model | placement | context | device | llama.cpp (real) | ggufmap fit | fit error | llama.cpp's projection | projection error |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|"

# row MODEL "PLACEMENT" "CONTEXT": placement and context in fit's spelling
row() {
  local model=$1 place=$2 ctx=$3 n=$((RANDOM)) dir
  dir="$WORK/run-$n"
  mkdir -p "$dir"
  local -a pf cf of pj
  local gpu=
  read -r -a pf <<<"$place"
  read -r -a cf <<<"$ctx"
  # the oracle's and the projection's spellings
  of=(--no-repack) pj=(--no-repack)
  local i
  for ((i = 0; i < ${#pf[@]}; i++)); do
    case ${pf[$i]} in
      --device)
        of+=(--fake-gpu "${pf[$((i + 1))]}"); pj+=(--fake-gpu "${pf[$((i + 1))]}")
        case ${pf[$((i + 1))]} in metal) gpu=MTL0 ;; cuda) gpu=CUDA0 ;; esac
        i=$((i + 1)) ;;
      -ngl) of+=(--ngl "${pf[$((i + 1))]}"); pj+=(--ngl "${pf[$((i + 1))]}"); i=$((i + 1)) ;;
    esac
  done
  for ((i = 0; i < ${#cf[@]}; i++)); do
    case ${cf[$i]} in
      -c) of+=(--ctx "${cf[$((i + 1))]}"); pj+=(--ctx "${cf[$((i + 1))]}"); i=$((i + 1)) ;;
      -np) of+=(--np "${cf[$((i + 1))]}"); pj+=(--np "${cf[$((i + 1))]}"); i=$((i + 1)) ;;
      -fa) of+=(--fa "${cf[$((i + 1))]}"); pj+=(--fa "${cf[$((i + 1))]}"); i=$((i + 1)) ;;
    esac
  done
  "$GGUFMAP" fit "$WORK/$model.gguf" "${pf[@]}" "${cf[@]}" -nr --page 1B --json >"$dir/fit.json" 2>/dev/null
  # the batch sizes fit resolved (llama.cpp's CLI defaults unless given):
  # the oracle's --decode N would otherwise set n_batch = n_ubatch = N
  local nb nub
  read -r nb nub < <(node -e 'const f=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(f.context.n_batch, f.context.n_ubatch)' "$dir/fit.json")
  "$ORACLE" "${of[@]}" --b "$nb" --ub "$nub" --decode "$nb" --logits-all "$WORK/$model.gguf" >"$dir/oracle.out" 2>&1
  "$PROJECTION" "${pj[@]}" --b "$nb" --ub "$nub" "$WORK/$model.gguf" >"$dir/proj.out" 2>&1
  # llama.cpp's real bytes per device (the decode must have run: one
  # sequence holds n_batch tokens, n_ctx / np >= n_batch)
  if ! node "$HERE/real_total.js" "$dir/oracle.out" "$gpu" >"$dir/real.json"; then
    echo "FAIL $model $place $ctx: $(tail -n 2 "$dir/oracle.out")" >&2; n_fail=$((n_fail + 1)); rm -rf "$dir"; return
  fi
  node - "$dir/fit.json" "$dir/real.json" "$dir/proj.out" "$model" "$place" "$ctx" <<'EOF' || n_fail=$((n_fail + 1))
const fs = require('fs');
const [fitPath, realPath, projPath, model, place, ctx] = process.argv.slice(2);
const fit = JSON.parse(fs.readFileSync(fitPath, 'utf8'));
const real = JSON.parse(fs.readFileSync(realPath, 'utf8'));
const proj = {};
for (const l of fs.readFileSync(projPath, 'utf8').split('\n')) {
  const m = l.match(/^PROJ device=(\S+) model=(\d+) context=(\d+) compute=(\d+)/);
  if (m) proj[m[1] === 'host' ? 'CPU' : m[1]] = { model: +m[2], context: +m[3], compute: +m[4] };
}
const mib = (x) => (x / 1048576).toFixed(2);
let bad = 0;
for (const d of fit.devices) {
  const p = proj[d.name];
  const sum = (kinds) => fit.buffers.filter((b) => b.device === d.name && kinds.includes(b.kind)).reduce((a, b) => a + b.bytes, 0);
  const r = real[d.name];
  if (r === undefined || (d.exact ? d.total !== r : d.total < r)) {
    console.error(`FAIL ${model} ${place} ${ctx} ${d.name}: fit ${d.total} (${d.exact ? 'exact' : 'a bound'}), llama.cpp ${r}`); bad = 1;
  }
  const compute = sum(['compute']);
  if (!p || p.context !== sum(['kv', 'rs']) || (d.exact ? p.compute !== compute : p.compute > compute)) {
    console.error(`FAIL ${model} ${place} ${ctx} ${d.name}: projection ${JSON.stringify(p)} vs fit kv+rs ${sum(['kv', 'rs'])} compute ${compute}`); bad = 1;
  }
  const pt = p ? p.model + p.context + p.compute : 0;
  const pct = (x) => (r ? ((x - r) / r * 100).toFixed(1) : '?') + ' %';
  console.log(`| ${model} | ${place || 'cpu'} | ${ctx} | ${d.name} | ${mib(r || 0)} | ${mib(d.total)}${d.exact ? '' : ' (bound)'} | ${pct(d.total)} | ${mib(pt)} | ${pct(pt)} |`);
}
process.exit(bad);
EOF
  rm -rf "$dir"
}

row llama "" "-c 4096"
row llama "--device metal -ngl all" "-c 16384 -np 2"
row llama "--device metal -ngl 2" "-c 8192 -fa off"
row llama "--device cuda -ngl all" "-c 4096 -b 512"
row qwen3moe "--device metal -ngl all" "-c 8192"
row qwen3moe "--device metal -ngl 1" "-c 16384 -np 4"
row gemma4 "--device metal -ngl all" "-c 32768 -b 1024"
row gemma4 "--device cuda -ngl 4" "-c 8192 -fa off"
row qwen4exp "--device metal -ngl all" "-c 16384 -b 512"
row qwen4exp "" "-c 4096 -np 2 -b 512 -ub 256"
row qwen2 "--device metal -ngl 2" "-c 8192"
row deepseek2 "--device metal -ngl all" "-c 16384 -fa off"
row gemma3 "--device cuda -ngl all" "-c 32768 -np 2"
row qwen35 "--device metal -ngl all" "-c 8192"
row mamba2 "" "-c 4096 -np 2"
row gpt-oss "--device metal -ngl 2" "-c 8192"

if [ "$n_fail" -gt 0 ]; then
  echo "projection: $n_fail configurations where fit or the projection's context/compute disagree with llama.cpp"
  exit 1
fi
echo "projection: ok: fit equals llama.cpp's real totals on every exact row and is never below them; the projection's context and compute equal fit's (its compute below fit's bounds)"
