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
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
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
