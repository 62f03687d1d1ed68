#!/usr/bin/env bash
# `ggufmap fit` as a command: exit statuses and usage errors, the
# ggufmap.fit/1 document, the --mem rule, and the two searches checked
# against the real llama.cpp (the oracle creates the contexts and decodes a
# full batch; tests/fit/real_total.js adds up what it holds per device):
#   --max-ctx R      llama.cpp at -c R fits the limit, at -c R+256 it does not;
#   suggestions      with the limit set to what llama.cpp really holds with
#                    q8_0 K/V and -ngl N (or --n-cpu-moe N), fit suggests
#                    exactly that N, and llama.cpp at N+1 GPU layers (N-1
#                    CPU-side expert layers) exceeds the limit;
#   two GPUs         --limit per device (CUDA0=..,CUDA1=..): the checks, the
#                    usage errors, --max-ctx under both limits and the -ts
#                    suggestion, each against llama.cpp on two fake CUDA
#                    devices.
# Plans use --page 1B so that totals are the buffers' bytes, as the fake
# Metal allocates them (it does not round to pages).
#
# usage: tests/fit/cli.sh GGUFMAP FIXTURE ORACLE WORKDIR
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: cli.sh GGUFMAP FIXTURE ORACLE WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 ORACLE=$3 WORK=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
n_fail=0
fail() { echo "FAIL: $*" >&2; n_fail=$((n_fail + 1)); }
ok() { echo "ok: $*"; }

L="$WORK/llama.gguf" M="$WORK/qwen3moe.gguf"
"$FIXTURE" --arch llama --layers 4 --n-embd 256 --n-head 4 --n-head-kv 2 -o "$L" >/dev/null &&
"$FIXTURE" --arch qwen3moe --layers 3 --head-dim 64 -o "$M" >/dev/null || { echo "FAIL: fixtures" >&2; exit 1; }

# expect_rc WANT WHAT ARGS...: the exit status of `ggufmap fit ARGS`
expect_rc() {
  local want=$1 what=$2
  shift 2
  "$GGUFMAP" fit "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  if [ $rc -eq "$want" ]; then ok "$what: exit $rc"; else fail "$what: exit $rc, want $want ($(head -c 200 "$WORK/err"))"; fi
}

# --- exit statuses and usage errors ---------------------------------------
expect_rc 0 "--help" --help
grep -q '^usage: ggufmap fit MODEL' "$WORK/out" || fail "--help prints no usage line"
expect_rc 1 "no MODEL"
expect_rc 1 "two MODELs" "$L" "$L"
expect_rc 1 "unknown option" "$L" --bogus
expect_rc 1 "-fa maybe" "$L" -fa maybe
expect_rc 1 "-ctk q3_K (not a cache type llama.cpp accepts)" "$L" -ctk q3_K
expect_rc 1 "--limit 12Q" "$L" --limit 12Q
expect_rc 1 "--max-ctx without a limit" "$L" --max-ctx
expect_rc 2 "a missing file" "$WORK/none.gguf"
grep -q 'none.gguf' "$WORK/err" || fail "the missing file's error does not name it"
# an architecture llama.cpp loads and fit does not model (none of the
# fixtures'): the qwen2 fixture renamed to dream (a diffusion model on
# qwen2's tensors), key prefixes included (same length)
"$FIXTURE" --arch qwen2 -o "$WORK/qwen2.gguf" >/dev/null || fail "fixture qwen2"
node -e '
  const fs = require("fs"); const d = fs.readFileSync(process.argv[1]);
  const from = Buffer.from("qwen2"), to = Buffer.from("dream");
  for (let i = d.indexOf(from); i >= 0; i = d.indexOf(from, i + 1)) to.copy(d, i);
  fs.writeFileSync(process.argv[2], d);' "$WORK/qwen2.gguf" "$WORK/dream.gguf" || fail "renaming qwen2 to dream"
"$ORACLE" --ctx 256 "$WORK/dream.gguf" >"$WORK/oracle.out" 2>&1
grep -q '^CTX ok' "$WORK/oracle.out" || fail "llama.cpp does not create a context for the dream fixture"
expect_rc 2 "an unmodelled architecture" "$WORK/dream.gguf"
grep -q "architecture 'dream' is not modelled" "$WORK/err" || fail "the unmodelled architecture is not named"
expect_rc 3 "--mtp on a model without MTP layers (llama.cpp refuses the draft context)" "$L" --mtp
grep -q "refuses the MTP draft context.*doesn't contain MTP layers" "$WORK/out" || fail "the MTP refusal is not reported"
# a key of the wrong type: llama.cpp refuses to load the model, and so does fit
node -e '
  const fs = require("fs"); const d = fs.readFileSync(process.argv[1]);
  const k = Buffer.from("llama.context_length"); const t = d.indexOf(k) + k.length;
  if (d.readUInt32LE(t) !== 4) process.exit(1);            // GGUF_TYPE_UINT32
  d.writeUInt32LE(5, t); fs.writeFileSync(process.argv[2], d);' "$L" "$WORK/i32.gguf" ||
  fail "llama.context_length is not a u32 in the fixture"
"$ORACLE" --ctx 256 "$WORK/i32.gguf" >"$WORK/oracle.out" 2>&1
grep -q 'key llama.context_length has wrong type i32' "$WORK/oracle.out" ||
  fail "llama.cpp accepts an i32 llama.context_length: $(tail -n 2 "$WORK/oracle.out")"
expect_rc 2 "an i32 llama.context_length (llama.cpp: wrong type)" "$WORK/i32.gguf"
grep -q 'key llama.context_length has wrong type i32 but expected type u32' "$WORK/err" || fail "the wrong type is not named as llama.cpp names it"
expect_rc 0 "no limit: nothing to exceed" "$L" -c 4096
expect_rc 3 "a quantized V cache without flash attention (llama.cpp refuses)" "$L" -ctv q8_0 -fa off
grep -q 'refuses this context' "$WORK/out" || fail "the refusal is not reported as one"
expect_rc 3 "a limit below the weights" "$L" --limit 1M
grep -q 'EXCEEDS the limit of 1.00 MiB' "$WORK/out" || fail "the text verdict does not show the limit"

# --- the JSON document -----------------------------------------------------
"$GGUFMAP" fit "$M" --device metal -c 8192 --limit 20M --max-ctx --page 1B --json >"$WORK/doc.json"
rc=$?
[ $rc -eq 3 ] || fail "qwen3moe at 20 MiB: exit $rc, want 3"
if node - "$WORK/doc.json" <<'EOF'; then ok "the ggufmap.fit/1 document has its fields"; else fail "the ggufmap.fit/1 document"; fi
const f = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const bad = [];
const want = (cond, what) => { if (!cond) bad.push(what); };
want(f.schema === 'ggufmap.fit/1', 'schema');
want(f.architecture === 'qwen3moe' && f.device === 'metal', 'architecture, device');
want(f.options.n_ctx === 8192 && f.options.limit === 20 * 1048576 && f.options.type_k === 'f16', 'options');
want(f.refusal === null, 'refusal null');
want(f.context.n_ctx === 8192 && f.context.n_batch === 2048 && f.context.n_ubatch === 512, 'context');
const names = f.devices.map((d) => d.name).join(',');
want(names === 'CPU,MTL0', `devices ${names}`);
for (const b of f.buffers) {
  want(['weights', 'kv', 'rs', 'output', 'compute'].includes(b.kind), `kind ${b.kind}`);
  want(typeof b.buft === 'string' && Number.isInteger(b.bytes) && typeof b.exact === 'boolean', 'buffer fields');
}
for (const k of ['weights', 'kv', 'output', 'compute'])
  want(f.buffers.some((b) => b.kind === k), `a ${k} buffer`);
const gpu = f.devices[1];
want(f.verdict.device === 'MTL0' && f.verdict.total === gpu.total && f.verdict.limit === 20 * 1048576 &&
     f.verdict.fits === false, 'verdict');
want(Number.isInteger(f.max_ctx) && f.max_ctx > 0 && f.max_ctx % 256 === 0 && f.max_ctx < 8192, `max_ctx ${f.max_ctx}`);
want(Number.isInteger(f.max_ctx_planned) && f.max_ctx_planned >= f.max_ctx, `max_ctx_planned ${f.max_ctx_planned}`);
want(Array.isArray(f.suggestions) && f.suggestions.length > 0, 'suggestions');
for (const b of bad) console.error(`document: ${b}`);
process.exit(bad.length ? 1 : 0);
EOF

# --- --mem: macOS's default working set, the RAM itself on the CPU ----------
# limit_of ARGS...: the verdict's limit in the JSON document
limit_of() { "$GGUFMAP" fit "$L" "$@" --json | node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).verdict.limit)'; }
G=1073741824
for c in "metal 128G $((96 * G))" "metal 64G $((48 * G))" "metal 32G $((32 * G / 3 * 2))" \
         "metal 16G $((16 * G / 3 * 2))" "cpu 16G $((16 * G))"; do
  read -r dev mem want <<<"$c"
  got=$(limit_of --device "$dev" --mem "$mem")
  [ "$got" = "$want" ] && ok "--device $dev --mem $mem: limit $got" ||
    fail "--device $dev --mem $mem: limit $got, want $want"
done
# --mem is the RAM check of its own beside --limit (which then sets the GPU's limit, as
# iogpu.wired_limit_mb does); a discrete GPU's --mem judges the host's side only
# checks_of ARGS...: "device:limit" of every check
checks_of() { "$GGUFMAP" fit "$L" "$@" --json | node -e '
  const f = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(f.verdict.checks.map((c) => `${c.device}:${c.limit}`).join(" "))'; }
for c in "metal|--limit 100G --mem 128G|MTL0:$((100 * G)) RAM:$((128 * G))" \
         "cuda|--limit 24G --mem 64G|CUDA0:$((24 * G)) RAM:$((64 * G))" "cuda|--mem 64G|RAM:$((64 * G))" \
         "cpu|--limit 8G --mem 16G|CPU:$((8 * G)) RAM:$((16 * G))"; do
  IFS='|' read -r dev args want <<<"$c"
  read -r -a a <<<"$args"
  got=$(checks_of --device "$dev" "${a[@]}")
  [ "$got" = "$want" ] && ok "--device $dev $args: checks $got" || fail "--device $dev $args: checks $got, want $want"
done

# --limit per device of -dev (a bare SIZE among them is the others'); -sm none
# -mg 1 uses CUDA1 alone, so only its limit is judged
for c in "CUDA0,CUDA1|--limit 24G,CUDA1=12G --mem 64G|CUDA0:$((24 * G)) CUDA1:$((12 * G)) RAM:$((64 * G))" \
         "CUDA0,CUDA1|--limit CUDA1=12G|CUDA1:$((12 * G))" \
         "CUDA1,CUDA0|--limit cuda0=20G,CUDA1=10G|CUDA1:$((10 * G)) CUDA0:$((20 * G))" \
         "CUDA0,CUDA1|--limit CUDA0=20G,CUDA1=10G -sm none -mg 1|CUDA1:$((10 * G))" \
         "CUDA0,CUDA1,CUDA2,CUDA3|--limit 8G,CUDA3=4G|CUDA0:$((8 * G)) CUDA1:$((8 * G)) CUDA2:$((8 * G)) CUDA3:$((4 * G))"; do
  IFS='|' read -r dev args want <<<"$c"
  read -r -a a <<<"$args"
  got=$(checks_of --device "$dev" "${a[@]}")
  [ "$got" = "$want" ] && ok "--device $dev $args: checks $got" || fail "--device $dev $args: checks $got, want $want"
done
expect_rc 1 "--limit naming a GPU outside -dev" "$L" -dev CUDA0,CUDA1 --limit CUDA2=1G
expect_rc 1 "--limit naming another backend's GPU" "$L" -dev CUDA0,CUDA1 --limit MTL0=1G
expect_rc 1 "--limit naming the CPU (the RAM is --mem)" "$L" -dev CUDA0 --limit cpu=1G
expect_rc 1 "--limit with an empty item" "$L" -dev CUDA0 --limit CUDA0=1G,
expect_rc 0 "--limit per device, both under" "$L" -dev CUDA0,CUDA1 --limit CUDA0=1G,CUDA1=1G
expect_rc 3 "--limit per device, one over" "$L" -dev CUDA0,CUDA1 -ts 1,1 --limit CUDA0=1G,CUDA1=1M
grep -q 'GPU memory (CUDA1):' "$WORK/out" && grep -q 'EXCEEDS the limit of 1.00 MiB' "$WORK/out" ||
  fail "the text verdict does not show CUDA1's check"

# --- searches against the real llama.cpp ------------------------------------
# real ORACLE_ARGS...: llama.cpp's bytes on MTL0 after a full batch (all
# layers on the fake Metal unless ORACLE_ARGS say --ngl N: the last wins)
real() {
  "$ORACLE" --no-repack --fake-gpu metal --ngl all --b 2048 --ub 512 --decode 2048 --logits-all "$@" \
    >"$WORK/oracle.out" 2>&1
  node "$HERE/real_total.js" "$WORK/oracle.out" MTL0 | node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).MTL0)'
}

# --max-ctx on llama at 40 MiB: llama.cpp at R fits, at R + 256 does not
LIMIT=$((40 * 1048576))
R=$("$GGUFMAP" fit "$L" --device metal -c 65536 --limit "${LIMIT}B" --max-ctx --page 1B --json |
    node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).max_ctx)')
at_r=$(real --ctx "$R" "$L")
at_r1=$(real --ctx "$((R + 256))" "$L")
if [ -n "$at_r" ] && [ -n "$at_r1" ] && [ "$at_r" -le "$LIMIT" ] && [ "$at_r1" -gt "$LIMIT" ]; then
  ok "--max-ctx $R at $LIMIT B: llama.cpp holds $at_r B at -c $R, $at_r1 B at -c $((R + 256))"
else
  fail "--max-ctx $R at $LIMIT B: llama.cpp holds '$at_r' B at -c $R, '$at_r1' B at -c $((R + 256))"
fi

# suggest MODEL NAME ORACLE_FLAG N NEXT FIT_FLAGS...: with the limit at what
# llama.cpp holds with q8_0 K/V, flash attention and ORACLE_FLAG N, fit's
# last suggestion is "NAME N" and llama.cpp with ORACLE_FLAG NEXT exceeds it.
# Loaded without mmap: suggestions count the repacked weights (only the
# device's own tensors), which is what llama.cpp allocates then; a mapped
# span would still cover the tensors moved out of its middle.
suggest() {
  local model=$1 name=$2 flag=$3 n=$4 next=$5
  shift 5
  local q8=(--no-mmap --ctk q8_0 --ctv q8_0 --fa on) limit over
  limit=$(real "${q8[@]}" "$flag" "$n" --ctx 16384 "$model")
  over=$(real "${q8[@]}" "$flag" "$next" --ctx 16384 "$model")
  if [ -z "$limit" ] || [ -z "$over" ] || [ "$over" -le "$limit" ]; then
    fail "$name: llama.cpp holds '$limit' B at $n and '$over' B at $next: no boundary to find"; return
  fi
  "$GGUFMAP" fit "$model" --device metal -c 16384 --page 1B -nr --no-mmap --limit "${limit}B" "$@" --json >"$WORK/sugg.json"
  if node - "$WORK/sugg.json" "$name $n" "$limit" <<'EOF'; then
const f = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const [want, limit] = [process.argv[3], +process.argv[4]];
const s = f.suggestions.map((x) => x.flags);
const last = f.suggestions[f.suggestions.length - 1];
const ok = f.verdict.fits === false && s.includes('-ctk q8_0 -ctv q8_0 -fa on') && last.flags === want &&
           last.total === limit && last.fits;
if (!ok) console.error(`suggestions ${JSON.stringify(f.suggestions)}, want the last '${want}' at ${limit} B`);
process.exit(ok ? 0 : 1);
EOF
    ok "$name: fit suggests '$name $n' at the $limit B llama.cpp holds with it ($over B at $next)"
  else
    fail "$name $n suggestion"
  fi
}
suggest "$L" -ngl --ngl 2 3
suggest "$M" --n-cpu-moe --n-cpu-moe 2 1 -ngl all

# --max-ctx under two GPUs' limits (-ts 1,3: CUDA1 holds the most): llama.cpp,
# on two fake CUDA devices, fits both at R, and at R + 256 exceeds one of them
real2() {
  local ts=1,3
  [ "$1" = --ts ] && { ts=$2; shift 2; }
  "$ORACLE" --no-repack --fake-gpu cuda --fake-gpus 2 --dev CUDA0,CUDA1 --ts "$ts" --ngl all --b 2048 --ub 512 \
    --decode 2048 --logits-all "$@" >"$WORK/oracle.out" 2>&1
  node "$HERE/real_total.js" "$WORK/oracle.out" CUDA0,CUDA1 | node -e '
    const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(`${r.CUDA0} ${r.CUDA1}`)'
}
L0=$((30 * 1048576)) L1=$((40 * 1048576))
R=$("$GGUFMAP" fit "$L" -dev CUDA0,CUDA1 -ts 1,3 -c 65536 --limit "CUDA0=${L0}B,CUDA1=${L1}B" --max-ctx --json |
    node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).max_ctx)')
read -r a0 a1 <<<"$(real2 --ctx "$R" "$L")"
read -r b0 b1 <<<"$(real2 --ctx "$((R + 256))" "$L")"
if [ -n "$b1" ] && [ "$a0" -le "$L0" ] && [ "$a1" -le "$L1" ] && { [ "$b0" -gt "$L0" ] || [ "$b1" -gt "$L1" ]; }; then
  ok "--max-ctx $R under CUDA0=$L0,CUDA1=$L1: llama.cpp holds $a0+$a1 B at -c $R, $b0+$b1 B at -c $((R + 256))"
else
  fail "--max-ctx $R under CUDA0=$L0,CUDA1=$L1: llama.cpp holds '$a0' '$a1' B at -c $R, '$b0' '$b1' at -c $((R + 256))"
fi

# -ts: CUDA0 over its limit at -ts 3,1 and CUDA1 with room: fit suggests the split that fits, and
# llama.cpp with it holds at most each limit (after a full batch)
LT=$((30 * 1048576))
TS=$("$GGUFMAP" fit "$L" -dev CUDA0,CUDA1 -ts 3,1 -c 4096 --limit "${LT}B" --json | node -e '
  const f = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const s = f.suggestions.find((x) => x.flags.startsWith("-ts "));
  console.log(!f.verdict.fits && s && s.fits ? s.flags.slice(4) : "")')
read -r a0 a1 <<<"$(real2 --ts "${TS:-1,1}" --ctx 4096 "$L")"
if [ -n "$TS" ] && [ -n "$a1" ] && [ "$a0" -le "$LT" ] && [ "$a1" -le "$LT" ]; then
  ok "-ts 3,1 over ${LT} B per GPU: fit suggests -ts $TS, llama.cpp then holds $a0 and $a1 B"
else
  fail "-ts 3,1 over ${LT} B per GPU: fit suggests '-ts $TS', llama.cpp then holds '$a0' and '$a1' B"
fi

if [ "$n_fail" -gt 0 ]; then
  echo "cli: $n_fail failures"
  exit 1
fi
echo "cli: ok"
