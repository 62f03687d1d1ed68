// same_json.js A B: do two ggufmap JSON documents (inspect or plan) agree
// field by field?  Paths ("model", "path") differ between a local file and
// its URL, and only a remote read has the fetch counters ("fetched_bytes",
// "requests"): those are left out; so are plan's next steps ("suggestions"):
// for a remote model they leave out repack, which needs the file itself.
// Prints the first difference and exits 1.
'use strict';
const fs = require('fs');
const ignored = new Set(['model', 'path', 'fetched_bytes', 'requests', 'suggestions']);
const [a, b] = process.argv.slice(2).map(f => JSON.parse(fs.readFileSync(f, 'utf8')));

function diff(x, y, where) {
  if (typeof x !== typeof y || Array.isArray(x) !== Array.isArray(y) || (x === null) !== (y === null))
    return `${where}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
  if (Array.isArray(x)) {
    if (x.length !== y.length) return `${where}: ${x.length} elements vs ${y.length}`;
    for (let i = 0; i < x.length; i++) {
      const d = diff(x[i], y[i], `${where}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (x !== null && typeof x === 'object') {
    const keys = new Set([...Object.keys(x), ...Object.keys(y)].filter(k => !ignored.has(k)));
    for (const k of keys) {
      if (!(k in x) || !(k in y)) return `${where}.${k}: only in ${k in x ? 'the first' : 'the second'}`;
      const d = diff(x[k], y[k], `${where}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return x === y ? null : `${where}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
}

const d = diff(a, b, '$');
if (d) {
  console.log(d);
  process.exit(1);
}
