#!/usr/bin/env bash
# The seed's arithmetic (llama.cpp issue 29465), on the Qwen3.8-Flash-Next
# layout replica (103.7 GiB, sparse), for a 128 GB Mac at -c 262144:
#   - the f16 K and V caches of its 12 attention layers are 6,144 MiB, the
#     seed's 24 KiB per token (12 x 2 KV heads x 256 x 2 B x K and V), and the
#     indexer key cache is a buffer of its own beside them;
#   - llama.cpp's own projection (ggufmap-projection: common_get_device_memory_data,
#     what --fit uses) gives the same context and compute bytes per device;
#   - with --mem 128G (96 GiB working set) fit says "does not fit" (exit 3),
#     and "fits" (exit 0) once the model is repacked so that llama.cpp maps
#     nothing foreign; the repack suggestion predicts the repacked total.
#
# usage: tests/fit/seed.sh GGUFMAP FIXTURE PROJECTION WORKDIR
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: seed.sh GGUFMAP FIXTURE PROJECTION WORKDIR" >&2; exit 2; }
GGUFMAP=$1 FIXTURE=$2 PROJECTION=$3 WORK=$4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

"$FIXTURE" --replica qwen3.8-flash-next -o "$WORK/Q" >/dev/null || fail "writing the replica"
Q="$WORK/Q-00001-of-00004.gguf"
FLAGS=(--device metal -ngl all -c 262144)

# --- 6,144 MiB of K+V, the indexer cache beside it -----------------------
"$GGUFMAP" fit "$Q" "${FLAGS[@]}" --json >"$WORK/fit.json"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "ggufmap fit exited $rc"
node - "$WORK/fit.json" <<'EOF' || fail "the seed's KV arithmetic"
const fit = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const kv = fit.buffers.filter((b) => b.kind === 'kv');
const seed = 262144 * 24 * 1024; // 24 KiB per token: 6,144 MiB
const main = kv.filter((b) => b.what.startsWith('K f16 + V f16, 12 layers'));
const idx = kv.filter((b) => b.what.startsWith('indexer keys'));
let bad = 0;
if (main.length !== 1 || main[0].bytes !== seed || main[0].buft !== 'MTL0') {
  console.log(`K+V: ${JSON.stringify(main)}, want one MTL0 buffer of ${seed} B (6144 MiB)`); bad = 1;
}
// the indexer: K only, one head of 128 f16 per cell, 12 layers
if (idx.length !== 1 || idx[0].bytes !== 262144 * 128 * 2 * 12) {
  console.log(`indexer: ${JSON.stringify(idx)}, want one buffer of ${262144 * 128 * 2 * 12} B`); bad = 1;
}
if (!bad) console.log(`K+V ${main[0].bytes / 1048576} MiB, indexer keys ${idx[0].bytes / 1048576} MiB`);
process.exit(bad);
EOF
ok "K+V f16 of the 12 attention layers = 6144 MiB at -c 262144; indexer keys in their own buffer"

# --- llama.cpp's own projection: the same context and compute bytes ------
"$PROJECTION" --fake-gpu metal --ngl all --ctx 262144 "$Q" >"$WORK/proj.out" 2>&1 ||
  fail "llama.cpp's projection failed: $(tail -n 3 "$WORK/proj.out")"
node - "$WORK/fit.json" "$WORK/proj.out" <<'EOF' || fail "fit and llama.cpp's projection differ"
const fs = require('fs');
const fit = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const proj = {};
for (const l of fs.readFileSync(process.argv[3], 'utf8').split('\n')) {
  const m = l.match(/^PROJ device=(\S+) model=(\d+) context=(\d+) compute=(\d+)/);
  if (m) proj[m[1] === 'host' ? 'CPU' : m[1]] = { model: +m[2], context: +m[3], compute: +m[4] };
}
// the buffers' own bytes (device totals round Metal buffers to pages)
const sum = (dev, kinds) => fit.buffers.filter((b) => b.device === dev && kinds.includes(b.kind))
                                       .reduce((a, b) => a + b.bytes, 0);
let bad = 0;
for (const d of fit.devices) {
  const p = proj[d.name];
  const ctx = sum(d.name, ['kv', 'rs']); // llama.cpp's "context": its memory module, not the output buffer
  const comp = sum(d.name, ['compute']);
  if (!p || p.context !== ctx || p.compute !== comp) {
    console.log(`${d.name}: fit kv+rs ${ctx} compute ${comp}; llama.cpp ${JSON.stringify(p)}`); bad = 1;
  } else {
    console.log(`${d.name}: context ${ctx} B and compute ${comp} B in both`);
  }
}
process.exit(bad);
EOF
ok "llama.cpp's projection has fit's context and compute bytes on MTL0 and the host"

# --- the 128 GB Mac verdict, before and after repack ---------------------
"$GGUFMAP" fit "$Q" "${FLAGS[@]}" --mem 128G --json >"$WORK/before.json"
rc=$?
[ $rc -eq 3 ] || fail "128 GB Mac before repack: exit $rc, want 3 (does not fit)"
"$GGUFMAP" repack "$Q" --device metal -ngl all -o "$WORK/R.gguf" >"$WORK/repack.out" 2>&1 ||
  fail "repack: $(tail -n 3 "$WORK/repack.out")"
R="$WORK/R-00001-of-00004.gguf"
"$GGUFMAP" fit "$R" "${FLAGS[@]}" --mem 128G --json >"$WORK/after.json"
rc=$?
[ $rc -eq 0 ] || fail "128 GB Mac after repack: exit $rc, want 0 (fits)"
node - "$WORK/before.json" "$WORK/after.json" <<'EOF' || fail "the verdicts"
const fs = require('fs');
const before = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const after = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const limit = 96 * 1024 * 1048576; // macOS's default for 128 GiB: 3/4
let bad = 0;
const v0 = before.verdict, v1 = after.verdict;
if (v0.limit !== limit || v0.fits || !v0.fits_planned || v1.limit !== limit || !v1.fits) bad = 1;
// repacking makes llama.cpp's spans the plan's ranges: the "repack" suggestion's
// total is the repacked model's, up to the page rounding of a few range ends
const s = before.suggestions.find((x) => x.flags === 'repack');
if (!s || !s.fits || Math.abs(s.total - v1.total) > 16 * 16384) bad = 1;
const mib = (x) => (x / 1048576).toFixed(2);
console.log(`working set before ${mib(v0.total)} MiB (fits ${v0.fits}), after repack ${mib(v1.total)} MiB ` +
            `(fits ${v1.fits}), limit ${mib(limit)} MiB; repack suggestion ${s ? mib(s.total) : 'none'} MiB`);
process.exit(bad);
EOF
ok "128 GB Mac: does not fit before repack, fits after; the repack suggestion predicted the new total"

# --- unified memory judged whole (issue 18.2) ----------------------------
# A Mac has one RAM: the GPU working set must fit macOS's limit AND
# everything resident must fit the RAM.  Three cases on the replica:
#   64G, --n-cpu-moe 23, q8_0 cache: the GPU fits once repacked, the RAM
#     never (the experts sit twice: in the GPU spans and in CPU_REPACK):
#     exit 3, the RAM check named, no suggestion that fits;
#   128G, -ngl 34: the GPU fits, the RAM does not (exit 3);
#   128G, -ngl all -c 262144: the GPU does not fit, the RAM does.
# Every suggestion is re-checked by running fit with it (repack: on the
# repacked copy), and plan --mem gives the same weight-only RAM verdict.
checks() { node -e '
  const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const c = f.verdict.checks;
  const show = (x) => `${x.what}: ${(x.total / 1048576).toFixed(2)} MiB (planned ${(x.total_planned / 1048576).toFixed(2)}) of ${(x.limit / 1048576).toFixed(0)} MiB`;
  console.log(c.map(show).join("; "));
  const want = process.argv[2].split(",");   // gpu,gpu_planned,ram,ram_planned as 1/0
  const got = [c[0].fits, c[0].fits_planned, c[1].fits, c[1].fits_planned].map((x) => (x ? "1" : "0"));
  const ok = c.length === 2 && c[0].device === "MTL0" && c[1].device === "RAM" && c[1].what.startsWith("RAM (unified") &&
             got.join(",") === want.join(",") && f.verdict.fits === (got[0] === "1" && got[2] === "1");
  if (!ok) console.log(`checks ${got.join(",")}, want ${want.join(",")}`);
  process.exit(ok ? 0 : 1);' "$@"; }

M64=(--device metal --mem 64G --n-cpu-moe 23 -ctk q8_0 -ctv q8_0 -fa on)
"$GGUFMAP" fit "$Q" "${M64[@]}" >"$WORK/m64.txt" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "64 GB Mac, --n-cpu-moe 23: exit $rc, want 3"
grep -q '^RAM (unified memory: everything resident):' "$WORK/m64.txt" && grep -q 'EXCEEDS the limit of 64.00 GiB' "$WORK/m64.txt" ||
  fail "64 GB Mac: the text does not name the whole-memory check: $(head -c 600 "$WORK/m64.txt")"
"$GGUFMAP" fit "$Q" "${M64[@]}" --json >"$WORK/m64.json"
checks "$WORK/m64.json" 0,1,0,0 || fail "64 GB Mac: the two checks"
node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  process.exit(f.suggestions.some((s) => s.fits) ? 1 : 0)' "$WORK/m64.json" || fail "64 GB Mac: a suggestion claims to fit"
"$GGUFMAP" plan "$Q" --device metal --mem 64G --n-cpu-moe 23 --no-picture >"$WORK/p64.txt" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q '^RAM (unified memory: every weight resident, counted once' "$WORK/p64.txt" ||
  fail "plan --mem 64G: exit $rc or no RAM verdict: $(grep -A2 '^RAM' "$WORK/p64.txt")"
ok "64 GB Mac, --n-cpu-moe 23, q8_0 cache: exit 3 on the RAM check (fit and plan)"

M128=(--device metal --mem 128G -ngl 34)
"$GGUFMAP" fit "$Q" "${M128[@]}" --json >"$WORK/m128.json"
rc=$?
[ $rc -eq 3 ] || fail "128 GB Mac, -ngl 34: exit $rc, want 3"
checks "$WORK/m128.json" 1,1,0,1 || fail "128 GB Mac, -ngl 34: the two checks"
# its suggestion (repack) re-checked on the repacked copy
"$GGUFMAP" repack "$Q" "${M128[@]:0:2}" -ngl 34 -o "$WORK/R34.gguf" >"$WORK/r34.out" 2>&1 || fail "repack -ngl 34"
"$GGUFMAP" fit "$WORK/R34-00001-of-00004.gguf" "${M128[@]}" --json >"$WORK/r34.json"
rc=$?
[ $rc -eq 0 ] || fail "128 GB Mac, -ngl 34, repacked: exit $rc, want 0"
node -e '
  const fs = require("fs");
  const f = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), r = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const s = f.suggestions.find((x) => x.flags === "repack");
  const c = r.verdict.checks;
  // the repacked copy maps the planned ranges: the same totals, up to the page rounding of range ends (0.01%)
  const near = (a, b) => b <= a && a - b <= a / 10000;
  const ok = s && s.fits && r.verdict.fits && near(s.total, c[0].total) && near(s.resident, c[1].total);
  console.log(`repack suggested: GPU ${s && s.total} RAM ${s && s.resident}; repacked: GPU ${c[0].total} RAM ${c[1].total}`);
  process.exit(ok ? 0 : 1);' "$WORK/m128.json" "$WORK/r34.json" || fail "128 GB Mac, -ngl 34: the repack suggestion"
ok "128 GB Mac, -ngl 34: the GPU fits, the RAM does not (exit 3); repacked, both fit as suggested"

"$GGUFMAP" fit "$Q" --device metal -ngl all -c 262144 --mem 128G --json >"$WORK/mall.json"
rc=$?
[ $rc -eq 3 ] || fail "128 GB Mac, -ngl all: exit $rc, want 3"
checks "$WORK/mall.json" 0,1,1,1 || fail "128 GB Mac, -ngl all: the two checks"
ok "128 GB Mac, -ngl all -c 262144: the RAM fits, the GPU does not (exit 3)"

# a suggestion that changes flags, re-checked: --mem 96G on the -ngl all
# run wants the q8_0 cache or fewer layers; each listed step is run
"$GGUFMAP" fit "$Q" --device metal -ngl all -c 262144 --mem 96G --json >"$WORK/m96.json"
node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  for (const s of f.suggestions) if (s.flags !== "repack") console.log(s.flags);' "$WORK/m96.json" >"$WORK/m96.flags"
[ -s "$WORK/m96.flags" ] || fail "--mem 96G: no suggestion but repack"
extra=()
while read -r line; do
  read -r -a add <<<"$line"
  extra+=("${add[@]}")
  "$GGUFMAP" fit "$Q" --device metal -ngl all -c 262144 --mem 96G "${extra[@]}" --json >"$WORK/step.json"
  node -e '
    const fs = require("fs");
    const f = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), r = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
    const s = f.suggestions.find((x) => x.flags === process.argv[3]);
    const c = r.verdict.checks;
    // a step is judged with the plan weights the steps before it imply (repack first): its totals are the planned ones
    const ok = s.total === c[0].total_planned && s.resident === c[1].total_planned && s.fits === r.verdict.fits_planned;
    console.log(`${process.argv[3]}: suggested GPU ${s.total} RAM ${s.resident} fits ${s.fits}; ` +
                `fit: GPU ${c[0].total_planned} RAM ${c[1].total_planned} fits ${r.verdict.fits_planned}`);
    process.exit(ok ? 0 : 1);' "$WORK/m96.json" "$WORK/step.json" "$line" || fail "--mem 96G: the step '$line' is not what fit says"
done <"$WORK/m96.flags"
ok "--mem 96G: every suggested step re-checked by fit ($(tr '\n' ';' <"$WORK/m96.flags"))"
