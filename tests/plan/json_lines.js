// node json_lines.js PLAN.json LINES
// Cross-check of `ggufmap plan --json` (schema ggufmap.plan/1) against the
// buffer lines of `ggufmap plan --format buffers` for the same flags: the
// buffers[] list, rewritten as MAPPED/ALLOC lines, must equal LINES exactly
// (with --mtp: then "LOAD mtp" and the buffers[] of the "mtp" member); every
// mapped buffer must also be self-consistent (size = last - first,
// own + foreign <= size, ranges sorted, disjoint, inside the span, covering
// at least the own bytes, ranges_bytes = their sum).
// Prints the differences and exits 1 on any.
'use strict';
const fs = require('fs');
const [jsonPath, linesPath] = process.argv.slice(2);
const plan = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
const want = fs.readFileSync(linesPath, 'utf8').split('\n').filter((l) => l.length > 0);
const problems = [];
if (plan.schema !== 'ggufmap.plan/1') problems.push(`schema is ${JSON.stringify(plan.schema)}, not "ggufmap.plan/1"`);
// One load's buffers[] as lines ('where' names it in messages).
function lines(load, where) {
  if (!Array.isArray(load.buffers)) {
    problems.push(`${where}: no buffers[] array`);
    return [];
  }
  return load.buffers.map((b, i) => {
    const need = b.mapped ? ['name', 'shard', 'first', 'last', 'size', 'max_tensor'] : ['name', 'size', 'n_tensors'];
    for (const k of need) if (!(k in b)) problems.push(`${where}.buffers[${i}] has no "${k}"`);
    if (b.mapped) {
      if (b.size !== b.last - b.first) problems.push(`${where}.buffers[${i}] size ${b.size} != last - first = ${b.last - b.first}`);
      if (b.own_bytes + b.foreign_bytes > b.size)
        problems.push(`${where}.buffers[${i}] own ${b.own_bytes} + foreign ${b.foreign_bytes} > size ${b.size}`);
      const fsum = (b.foreign || []).reduce((s, f) => s + f.bytes, 0);
      if (fsum !== b.foreign_bytes) problems.push(`${where}.buffers[${i}] foreign[] sums to ${fsum}, foreign_bytes ${b.foreign_bytes}`);
      let prev = b.first, sum = 0;
      for (const [a, z] of b.ranges || []) {
        if (!(a >= prev && z > a && z <= b.last)) problems.push(`${where}.buffers[${i}] range [${a}, ${z}) out of order or outside [${b.first}, ${b.last})`);
        prev = z; sum += z - a;
      }
      if (sum !== b.ranges_bytes) problems.push(`${where}.buffers[${i}] ranges sum to ${sum}, ranges_bytes ${b.ranges_bytes}`);
      if (sum < b.own_bytes) problems.push(`${where}.buffers[${i}] ranges ${sum} B cannot cover own ${b.own_bytes} B`);
      return `MAPPED buft=${b.name} file=${b.shard} first=${b.first} last=${b.last} size=${b.size} max_tensor=${b.max_tensor}`;
    }
    return `ALLOC buft=${b.name} size=${b.size} n_tensors=${b.n_tensors}`;
  });
}
const got = lines(plan, 'plan');
if (plan.mtp) got.push('LOAD mtp', ...lines(plan.mtp, 'plan.mtp'));
const n = Math.max(got.length, want.length);
for (let i = 0; i < n; i++) {
  if (got[i] !== want[i]) problems.push(`line ${i + 1}: --format buffers: ${want[i] ?? '(none)'}\n              --json:           ${got[i] ?? '(none)'}`);
}
for (const p of problems) console.log(p);
process.exit(problems.length ? 1 : 0);
