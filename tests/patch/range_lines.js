// node range_lines.js PLAN.json OUT [PLAN.json OUT ...]
// What the patched llama.cpp must print for a plan (`ggufmap plan --json`,
// schema ggufmap.plan/1): one oracle line per buffer it creates, in its
// order.  A mapped buffer becomes one MAPPED line per planned range (the
// patch gives every range its own buffer_from_host_ptr buffer), with the
// context's largest tensor as max_tensor; an allocated buffer stays one
// ALLOC line.  A plan made with --mtp has the MTP draft head's load under
// "mtp": its lines follow a "LOAD mtp" line, as the oracle's --mtp prints
// them.  The last line says whether the load must abort: ggml's CPU
// backend asserts a 32-byte aligned pointer (ggml_backend_cpu_buffer_from_ptr),
// so a CPU_Mapped range that starts off 32 bytes aborts, as a span does today.
'use strict';
const fs = require('fs');

// the oracle lines of one load's buffers into out; true if the load aborts
function loadLines(buffers, out) {
  let abort = false;
  for (const b of buffers) {
    if (!b.mapped) {
      out.push(`ALLOC buft=${b.name} size=${b.size} n_tensors=${b.n_tensors}`);
      continue;
    }
    for (const [first, last] of b.ranges) {
      out.push(`MAPPED buft=${b.name} file=${b.shard} first=${first} last=${last} size=${last - first} max_tensor=${b.max_tensor}`);
      if (b.name === 'CPU_Mapped' && first % 32 !== 0) abort = true;
    }
  }
  return abort;
}

// the oracle lines of one plan document (and of its MTP load), then the EXPECT line
function rangeLines(path) {
  const plan = JSON.parse(fs.readFileSync(path, 'utf8'));
  const load = (doc) => {
    if (!doc || !Array.isArray(doc.buffers)) throw new Error(`${path}: not a ggufmap.plan/1 document`);
    return doc.buffers;
  };
  if (plan.schema !== 'ggufmap.plan/1') throw new Error(`${path}: not a ggufmap.plan/1 document`);
  const out = [];
  let abort = loadLines(load(plan), out);
  if (plan.mtp) {
    out.push('LOAD mtp');
    abort = loadLines(load(plan.mtp), out) || abort;
  }
  out.push(abort ? 'EXPECT abort' : 'EXPECT ok');
  return out.join('\n') + '\n';
}

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2) {
  console.error('usage: node range_lines.js PLAN.json OUT [PLAN.json OUT ...]');
  process.exit(2);
}
try {
  for (let i = 0; i < args.length; i += 2) fs.writeFileSync(args[i + 1], rangeLines(args[i]));
} catch (e) {
  console.error(e.message);
  process.exit(2);
}
