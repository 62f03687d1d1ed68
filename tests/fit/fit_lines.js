// node fit_lines.js FIT.json
// `ggufmap fit --json` (schema ggufmap.fit/1) as the oracle's context lines,
// for a line-by-line comparison with `ggufmap-oracle --ctx ...`:
//   CTXBUF kind=K buft=B size=S          every context buffer, in order
//   OUTMAX buft=B size=S                 the output buffer at n_batch rows
//   BOUND kind=K buft=B size=S           a buffer that is an upper bound (exact: false)
//   CTX ok n_ctx=.. n_ctx_seq=.. n_batch=.. n_ubatch=.. n_seq_max=.. fa=on|off   the context's sizes
//   CTX fail | CTX abort                 llama.cpp refuses the context
//   DRAFT mtp                            with --mtp: the MTP draft context's lines follow
// and checks the document's own consistency: device totals are the sums of
// their buffers; exits 1 (after printing the problems) when they are not.
'use strict';
const fs = require('fs');
const fit = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const problems = [];
if (fit.schema !== 'ggufmap.fit/1') problems.push(`schema is ${JSON.stringify(fit.schema)}`);
// context_lines(REFUSAL, SIZES, CONTEXT): one context's lines
function contextLines(refusal, c, which) {
  if (refusal) {
    console.log(refusal.aborts ? 'CTX abort' : 'CTX fail');
    return;
  }
  console.log(`CTX ok n_ctx=${c.n_ctx} n_ctx_seq=${c.n_ctx_seq} n_batch=${c.n_batch} n_ubatch=${c.n_ubatch} ` +
              `n_seq_max=${c.n_seq_max} fa=${c.flash_attn ? 'on' : 'off'}`);
  for (const b of fit.buffers) {
    if (b.kind === 'weights' || b.context !== which) continue;
    console.log(`${b.exact ? 'CTXBUF' : 'BOUND'} kind=${b.kind} buft=${b.buft} size=${b.bytes}`);
    if (b.kind === 'output') console.log(`OUTMAX buft=${b.buft} size=${b.bytes_max}`);
  }
}
contextLines(fit.refusal, fit.context, 'main');
if (fit.mtp) {
  console.log('DRAFT mtp');
  contextLines(fit.mtp.refusal, fit.mtp.context, 'mtp');
}
// device totals against the buffers (no page rounding: the tests plan with --page 1)
for (const d of fit.devices) {
  const sum = { weights: 0, kv: 0, rs: 0, output: 0, compute: 0 };
  for (const b of fit.buffers) if (b.device === d.name) sum[b.kind] += b.kind === 'output' ? b.bytes_max : b.bytes;
  for (const k of ['weights', 'kv', 'rs', 'compute'])
    if (sum[k] !== d[k]) problems.push(`device ${d.name}: ${k} ${d[k]} but its buffers sum to ${sum[k]}`);
  if (sum.output !== d.output_max) problems.push(`device ${d.name}: output_max ${d.output_max}, buffers ${sum.output}`);
  const total = d.weights + d.kv + d.rs + d.output_max + d.compute;
  if (total !== d.total) problems.push(`device ${d.name}: total ${d.total} != ${total}`);
}
for (const p of problems) console.error(`fit_lines: ${p}`);
process.exit(problems.length ? 1 : 0);
