#!/usr/bin/env bash
# The ggufmap command line: exit statuses, --help everywhere, errors that
# name the file and offset, inspect's text and its JSON against the fixture
# maker's own account of what it wrote.
#   cli.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
expect_status() { # STATUS DESCRIPTION CMD...
  local want=$1 what=$2; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got == "$want" ]]; then ok; else bad "$what: exit $got, expected $want; stderr: $(head -c 300 "$work/err")"; fi
}

expect_status 1 "no command" "$ggufmap"
expect_status 0 "--help" "$ggufmap" --help
expect_status 0 "--version" "$ggufmap" --version
expect_status 1 "unknown command" "$ggufmap" frobnicate
for sub in inspect plan repack hash verify load; do
  expect_status 0 "$sub --help" "$ggufmap" "$sub" --help
  grep -q "usage: ggufmap $sub" "$work/out" && ok || bad "$sub --help prints no usage"
done
expect_status 1 "inspect without MODEL" "$ggufmap" inspect
expect_status 1 "inspect with a bad option" "$ggufmap" inspect --bogus x.gguf
expect_status 1 "inspect with two models" "$ggufmap" inspect a.gguf b.gguf
expect_status 2 "inspect a missing file" "$ggufmap" inspect "$work/none.gguf"
grep -q "none.gguf" "$work/err" && ok || bad "missing file not named: $(cat "$work/err")"

# A 3-shard llama fixture, inspected from its middle shard.
"$fixture" --arch llama --shards 3 --type q8_0 --order shuffle:5 --json -o "$work/m.gguf" >"$work/maker.json" || bad "fixture maker"
expect_status 0 "inspect a shard" "$ggufmap" inspect "$work/m-00002-of-00003.gguf"
grep -q "in 3 shards" "$work/out" && ok || bad "text summary lacks the shard count"
grep -q "architecture  llama" "$work/out" && ok || bad "text summary lacks the architecture"
expect_status 0 "inspect --json" "$ggufmap" inspect --json "$work/m-00003-of-00003.gguf"
cp "$work/out" "$work/ours.json"
node - "$work/ours.json" "$work/maker.json" <<'JS' && ok || bad "JSON differs from the fixture maker's account"
const fs = require('fs');
const ours = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const maker = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const want = maker.files.flatMap(f => f.tensors);
if (ours.schema !== 'ggufmap.inspect/1') throw new Error('schema ' + ours.schema);
if (ours.shards.length !== 3 || ours.n_tensors !== want.length || ours.tensors.length !== want.length)
  throw new Error(`counts: ${ours.shards.length} shards, ${ours.tensors.length} tensors, want ${want.length}`);
const byName = new Map(ours.tensors.map(t => [t.name, t]));
for (const w of want) {
  const t = byName.get(w.name);
  if (!t || t.shard !== w.shard || t.offset !== w.offset || t.size !== w.size || t.type !== w.type)
    throw new Error('tensor ' + w.name + ': ' + JSON.stringify(t) + ' vs ' + JSON.stringify(w));
  for (const k of ['name', 'shard', 'type', 'shape', 'offset', 'size']) if (!(k in t)) throw new Error('no ' + k);
}
const tok = ours.metadata.find(m => m.key === 'general.architecture');
if (!tok || tok.value !== 'llama') throw new Error('metadata');
JS

# Long arrays are summarised unless --full.
"$fixture" --arch llama --tokenizer spm -o "$work/spm.gguf" >/dev/null || bad "fixture maker (spm)"
"$ggufmap" inspect --json "$work/spm.gguf" >"$work/short.json" && "$ggufmap" inspect --json --full "$work/spm.gguf" >"$work/full.json"
node - "$work/short.json" "$work/full.json" <<'JS' && ok || bad "--full / summary of long arrays"
const fs = require('fs');
const get = f => JSON.parse(fs.readFileSync(f, 'utf8')).metadata.find(m => m.key === 'tokenizer.ggml.tokens');
const s = get(process.argv[2]), f = get(process.argv[3]);
if (!s.truncated || s.value.length !== 8 || f.truncated || f.value.length !== f.count || f.count <= 8)
  throw new Error(JSON.stringify([s.count, s.value.length, f.value.length]));
JS

# A damaged file: exit 2, and the message names the file and an offset.
head -c 300 "$work/spm.gguf" >"$work/cut.gguf"
expect_status 2 "inspect a truncated file" "$ggufmap" inspect "$work/cut.gguf"
grep -q "cut.gguf: offset [0-9]*" "$work/err" && ok || bad "truncation message: $(cat "$work/err")"

# An unknown tensor type: refused, listed with --lenient.
{ printf 'GGUF'; printf '\x03\0\0\0'; printf '\x01\0\0\0\0\0\0\0'; printf '\0\0\0\0\0\0\0\0'
  printf '\x01\0\0\0\0\0\0\0t'; printf '\x01\0\0\0'; printf '\x08\0\0\0\0\0\0\0'; printf '\x63\0\0\0'
  printf '\0\0\0\0\0\0\0\0'; head -c 15 /dev/zero; head -c 32 /dev/urandom; } >"$work/unknown.gguf"
expect_status 2 "unknown type, strict" "$ggufmap" inspect "$work/unknown.gguf"
grep -q "tensor 't': unknown ggml type 99" "$work/err" && ok || bad "unknown type message: $(cat "$work/err")"
expect_status 0 "unknown type, --lenient" "$ggufmap" inspect --lenient "$work/unknown.gguf"
grep -q "type#99" "$work/out" && grep -q "(estimated)" "$work/out" && ok || bad "lenient listing: $(cat "$work/out")"

# ---- plan ----
"$fixture" --arch llama --layers 4 --type f32 --move output.weight:first -o "$work/of.gguf" >/dev/null || bad "fixture maker (plan)"
expect_status 0 "plan, metal, -ngl 1" "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1 --planner tight --color never
grep -q "load_tensors:  MTL0_Mapped model buffer size =" "$work/out" && ok || bad "plan prints no llama.cpp line"
grep -q "foreign: " "$work/out" && grep -q "picture" "$work/out" && ok || bad "plan text lacks foreign tensors or the picture"
grep -q $'\033\[' "$work/out" && bad "colour in a pipe with --color never" || ok
expect_status 0 "plan --color always" "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1 --color always
grep -q $'\033\[' "$work/out" && ok || bad "--color always gives no colour"
expect_status 3 "plan --json over the limit" "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1 --json --limit 100K
node - "$work/out" <<'JS' && ok || bad "plan JSON"
const fs = require('fs');
const j = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
if (j.schema !== 'ggufmap.plan/1') throw new Error('schema');
const gpu = j.buffers.find(b => b.name === 'MTL0_Mapped');
for (const k of ['name', 'shard', 'mapped', 'first', 'last', 'size', 'own_bytes', 'foreign', 'ranges'])
  if (!(k in gpu)) throw new Error('buffer lacks ' + k);
if (gpu.size !== gpu.last - gpu.first) throw new Error('size');
// output.weight first, then token_embd (CPU), then output_norm: token_embd is foreign in the span
if (gpu.foreign.length !== 1 || gpu.foreign[0].name !== 'token_embd.weight' || gpu.foreign[0].owner !== 'CPU')
  throw new Error('foreign ' + JSON.stringify(gpu.foreign));
if (gpu.foreign_bytes + gpu.own_bytes > gpu.size) throw new Error('bytes');
if (gpu.ranges.length !== 2) throw new Error('tight ranges: ' + JSON.stringify(gpu.ranges));
// 16 KiB pages: span 160 KiB wired, the two ranges 96 KiB; the limit is 100 KiB
if (j.working_set.limit !== 102400 || j.working_set.llama_fits !== false || j.working_set.planned_fits !== true)
  throw new Error('verdict ' + JSON.stringify(j.working_set));
JS
expect_status 0 "plan --svg" "$ggufmap" plan "$work/of.gguf" --device metal -ngl 1 --svg "$work/p.svg"
grep -q "<svg" "$work/p.svg" && grep -q "</svg>" "$work/p.svg" && ok || bad "svg content"
cp "$work/p.svg" "$work/p.before"
expect_status 2 "plan --svg onto an existing file" "$ggufmap" plan "$work/of.gguf" --svg "$work/p.svg"
cmp -s "$work/p.svg" "$work/p.before" && grep -q "refusing to overwrite" "$work/err" && ok || bad "--svg overwrote or said nothing"
ls "$work" | grep -q "tmp-" && bad "a temporary file was left behind" || ok
expect_status 1 "plan bad planner" "$ggufmap" plan "$work/of.gguf" --planner fastest
expect_status 1 "plan bad device" "$ggufmap" plan "$work/of.gguf" --device tpu
expect_status 1 "plan bad regex" "$ggufmap" plan "$work/of.gguf" -ot 'blk\.(=CPU'
grep -q "invalid regex" "$work/err" && ok || bad "bad regex message: $(cat "$work/err")"
expect_status 1 "plan unknown buft" "$ggufmap" plan "$work/of.gguf" -ot 'blk=MTL0'
expect_status 2 "plan a missing model" "$ggufmap" plan "$work/none.gguf"
"$fixture" --arch llama --alignment 16 -o "$work/a16.gguf" >/dev/null || bad "fixture maker (alignment 16)"
"$ggufmap" plan "$work/a16.gguf" --format buffers >"$work/out" 2>"$work/err"; st=$?
if grep -q "offset [0-9]*, not a multiple of 32" "$work/err"; then
  [[ $st == 2 ]] && ok || bad "a CPU span off 32 bytes: exit $st"
else
  [[ $st == 0 ]] && ok || bad "alignment 16 whose span happens to be aligned: exit $st"
fi

echo "$passed passed, $failed failed"
[[ $failed == 0 && $passed -gt 0 ]]
