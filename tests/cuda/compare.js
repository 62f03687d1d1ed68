// node compare.js RESULTS JSON_DIR [--list] [--known FILE]
// The real-CUDA comparison (docs/cuda.md): every buffer llama.cpp v0.5.0
// allocated on the H200 (RESULTS, written by tests/cuda/device.sh) against
// `ggufmap fit --json` for the same case (JSON_DIR/N.json and N.rc, N the
// case's 1-based position in RESULTS, written by tests/cuda/compare.sh).
//
// Per case, per buffer kind, in llama.cpp's order:
//   weights   MAPPED / ALLOC lines (buffer type and bytes) against fit's
//             `weights` buffers
//   kv, rs, output
//             CTXBUF lines against fit's buffers of that kind, to the byte
//   compute   CTXTOTAL kind=compute (what is live when the context is made)
//             against fit's compute buffers: equal where fit says exact,
//             not below where fit says it is a bound
//   context   the CTX line (n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max,
//             flash attention as resolved), or the same refusal / abort
// Cases run with GGML_CUDA_DISABLE_FUSION=1 (name ~nofusion; fit ran with
// the same variable) count their compute buffers apart ("compute, fusion
// off"): beside the same cases with fusion on they show what CUDA's
// fused-MoE lifetimes add.
//
// Prints a table, exact count / total per kind, then every mismatch (with
// --list, or when there are mismatches); exit status 1 on any mismatch.
// --known FILE: mismatches explained in docs/cuda.md, one a line
// "CASE KIND BUFT LLAMA FIT  # why" (KIND compute, BUFT CUDA0, bytes): they
// are listed and counted apart and do not fail; a known line that no longer
// differs does (the list must follow the model).
'use strict';
const fs = require('fs');
const [resultsPath, jsonDir, ...flags] = process.argv.slice(2);
if (!resultsPath || !jsonDir) {
  console.error('usage: node compare.js RESULTS JSON_DIR [--list]');
  process.exit(2);
}
const listAll = flags.includes('--list');
const knownAt = flags.indexOf('--known');
const known = new Map();
if (knownAt >= 0) {
  for (const line of fs.readFileSync(flags[knownAt + 1], 'utf8').split('\n')) {
    const body = line.replace(/#.*/, '').trim();
    if (body) known.set(body.split(/\s+/).join(' '), line);
  }
}
const knownSeen = new Set();
const knownHits = [];

// ------------------------------------------------------------ the record --
function parseResults(text) {
  const cases = [];
  let c = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('CASE\t')) {
      const [, name, fixture, env, args] = line.split('\t');
      c = { name, fixture, env, args, lines: [] };
      cases.push(c);
    } else if (c && line) {
      c.lines.push(line);
    }
  }
  return cases;
}

const kv = (line) => Object.fromEntries(line.split(' ').slice(1).filter((w) => w.includes('='))
  .map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));

// what llama.cpp did in one case: buffers per kind, the context line, the outcome
function realSide(c) {
  const r = { weights: [], kv: [], rs: [], output: [], compute: [], ctx: null, skipped: false, loaded: false };
  for (const l of c.lines) {
    const w = l.split(' ')[0];
    if (l.startsWith('SKIPPED')) r.skipped = true;
    else if (w === 'MAPPED' || w === 'ALLOC') { const f = kv(l); r.weights.push({ buft: f.buft, size: +f.size }); }
    else if (w === 'MODEL') r.loaded = true;
    else if (w === 'CTXBUF') {
      const f = kv(l);
      if (f.kind !== 'compute' && r[f.kind]) r[f.kind].push({ buft: f.buft, size: +f.size });
    } else if (w === 'CTXTOTAL') {
      const f = kv(l);
      if (f.kind === 'compute') r.compute.push({ buft: f.buft, size: +f.size });
    } else if (l.startsWith('CTX ok')) r.ctx = l;
    else if (l.startsWith('CTX fail')) r.ctx = 'CTX fail';
    else if (l.startsWith('RESULT abort') && r.loaded) r.ctx = 'CTX abort';
  }
  return r;
}

// what fit predicts for the same case
function fitSide(fit) {
  const p = { weights: [], kv: [], rs: [], output: [], compute: [], ctx: null };
  for (const b of fit.buffers) {
    if (b.context === 'model' && b.kind === 'weights') p.weights.push({ buft: b.buft, size: b.bytes, exact: true });
    else if (b.context === 'main' && p[b.kind]) p[b.kind].push({ buft: b.buft, size: b.bytes, exact: b.exact });
  }
  if (fit.refusal) p.ctx = fit.refusal.aborts ? 'CTX abort' : 'CTX fail';
  else {
    const c = fit.context;
    p.ctx = `CTX ok n_ctx=${c.n_ctx} n_ctx_seq=${c.n_ctx_seq} n_batch=${c.n_batch} n_ubatch=${c.n_ubatch} ` +
            `n_seq_max=${c.n_seq_max} fa=${c.flash_attn ? 'on' : 'off'}`;
  }
  return p;
}

// ------------------------------------------------------------ comparison --
const KINDS = ['weights', 'kv', 'rs', 'output', 'compute exact', 'compute bound', 'compute, fusion off', 'context'];
const tally = Object.fromEntries(KINDS.map((k) => [k, { equal: 0, total: 0 }]));
const mismatches = [];
const show = (l) => l.map((b) => `${b.buft}=${b.size}${b.exact === false ? '(bound)' : ''}`).join(' ') || '(none)';

function compareKind(c, kind, real, pred) {
  const compute = kind === 'compute';
  const off = compute && c.env !== '-';
  const label = (b) => (off ? 'compute, fusion off' : compute ? (b.exact ? 'compute exact' : 'compute bound') : kind);
  if (real.length !== pred.length || real.some((b, i) => b.buft !== pred[i].buft)) {
    // a different set of buffers: each of them differs
    const n = Math.max(real.length, pred.length);
    for (let i = 0; i < n; i++) tally[label(pred[i] || { exact: true })].total++;
    mismatches.push(`${c.name} (${c.fixture} ${c.args}${off ? ' ' + c.env : ''}): ${kind} buffers differ: ` +
                    `llama.cpp ${show(real)}, fit ${show(pred)}`);
    return;
  }
  pred.forEach((b, i) => {
    const t = tally[label(b)];
    t.total++;
    const ok = b.exact ? b.size === real[i].size : b.size >= real[i].size;
    if (ok) t.equal++;
    else {
      const d = b.size - real[i].size;
      const key = `${c.name} ${kind} ${b.buft} ${real[i].size} ${b.size}`;
      if (known.has(key)) {
        knownSeen.add(key);
        knownHits.push(known.get(key));
        return;
      }
      mismatches.push(`${c.name} (${c.fixture} ${c.args}${off ? ' ' + c.env : ''}): ${kind} ${b.buft}: ` +
                      `llama.cpp ${real[i].size}, fit ${b.size}${b.exact ? '' : ' (bound, below)'} ` +
                      `(${d > 0 ? '+' : ''}${d})`);
    }
  });
}

const cases = parseResults(fs.readFileSync(resultsPath, 'utf8'));
let skipped = 0;
cases.forEach((c, idx) => {
  const real = realSide(c);
  if (real.skipped) { skipped++; return; }
  const rc = fs.readFileSync(`${jsonDir}/${idx + 1}.rc`, 'utf8').trim();
  let fit;
  try {
    fit = JSON.parse(fs.readFileSync(`${jsonDir}/${idx + 1}.json`, 'utf8'));
  } catch (e) {
    tally.context.total++;
    mismatches.push(`${c.name} (${c.fixture} ${c.args}): ggufmap fit exited ${rc} without a JSON document`);
    return;
  }
  const pred = fitSide(fit);
  if (c.env === '-') compareKind(c, 'weights', real.weights, pred.weights);
  tally.context.total++;
  if (real.ctx === pred.ctx) tally.context.equal++;
  else mismatches.push(`${c.name} (${c.fixture} ${c.args}${c.env === '-' ? '' : ' ' + c.env}): ` +
                       `llama.cpp '${real.ctx || 'no context'}', fit '${pred.ctx}'`);
  if (!real.ctx || !real.ctx.startsWith('CTX ok') || !pred.ctx.startsWith('CTX ok')) return;
  if (c.env === '-') for (const k of ['kv', 'rs', 'output']) compareKind(c, k, real[k], pred[k]);
  compareKind(c, 'compute', real.compute, pred.compute);
});

// ---------------------------------------------------------------- report --
console.log(`${cases.length - skipped} cases compared${skipped ? ` (${skipped} not run on the device)` : ''}`);
console.log('kind                  equal / total');
for (const k of KINDS) {
  const t = tally[k];
  if (t.total) console.log(`${k.padEnd(21)} ${String(t.equal).padStart(5)} / ${t.total}`);
}
const compared = new Set(cases.map((c) => c.name));
for (const [key, line] of known)
  if (compared.has(key.split(' ')[0]) && !knownSeen.has(key)) mismatches.push(`known mismatch no longer seen (remove it from the list): ${line}`);
if (knownHits.length) {
  console.log(`${knownHits.length} known mismatches (docs/cuda.md):`);
  for (const k of knownHits) console.log(`  ${k}`);
}
if (mismatches.length || listAll) {
  console.log(`${mismatches.length} mismatches:`);
  for (const m of mismatches) console.log(`  ${m}`);
}
process.exit(mismatches.length ? 1 : 0);
