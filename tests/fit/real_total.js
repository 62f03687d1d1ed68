// node real_total.js ORACLE_OUT [GPU[,GPU...]]
// What llama.cpp really holds per device once a context exists and has
// decoded a full batch, from `ggufmap-oracle ... --decode N` output: the
// weight buffers (MAPPED and ALLOC lines) plus the context's buffers after
// the decode (DECTOTAL lines: KV, recurrent state, compute, the output
// buffer at its grown size).  A buffer type that starts with GPU (MTL0,
// CUDA0) counts for that device, anything else for the CPU; several GPUs
// (CUDA0,CUDA1) each for its own.  Prints one JSON object {"CPU": bytes,
// "MTL0": bytes}; exits 1 when the decode did not run.
'use strict';
const fs = require('fs');
const [path, gpu] = process.argv.slice(2);
const text = fs.readFileSync(path, 'utf8');
if (!/^DECODE ok /m.test(text)) {
  console.error(`real_total: ${path}: no DECODE ok line: the oracle's decode did not run`);
  process.exit(1);
}
const real = {};
const gpus = gpu ? gpu.split(',') : [];
const add = (buft, n) => {
  const dev = gpus.find((g) => buft.startsWith(g)) || 'CPU';
  real[dev] = (real[dev] || 0) + n;
};
for (const l of text.split('\n')) {
  const m = l.match(/^MAPPED buft=(\S+) .* size=(\d+)/) || l.match(/^ALLOC buft=(\S+) size=(\d+)/) ||
            l.match(/^DECTOTAL kind=\S+ buft=(\S+) size=(\d+)/);
  if (m) add(m[1], +m[2]);
}
console.log(JSON.stringify(real));
