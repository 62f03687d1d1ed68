// node gguf_kv.js IN.gguf OUT.gguf [--set KEY=TYPE:VALUE]... [--drop KEY]...
// A copy of a one-shard GGUF (v3) with metadata keys set (TYPE u32, i32,
// f32, bool, str, or i32s: an array of i32, comma-separated; an existing
// key is replaced in place, a new one appended)
// or dropped; tensor infos and data unchanged (the data section re-aligned
// to general.alignment).  For test fixtures the maker has no option for: a
// window on olmo2, gemma3 without one, granite without RoPE, ...
'use strict';
const fs = require('fs');

const [inPath, outPath, ...args] = process.argv.slice(2);
if (!inPath || !outPath) {
  console.error('usage: node gguf_kv.js IN.gguf OUT.gguf [--set KEY=TYPE:VALUE]... [--drop KEY]...');
  process.exit(2);
}
const buf = fs.readFileSync(inPath);
let off = 0;
const u32 = () => { const v = buf.readUInt32LE(off); off += 4; return v; };
const u64 = () => { const v = buf.readBigUInt64LE(off); off += 8; return v; };
const str = () => { const n = Number(u64()); const s = buf.toString('utf8', off, off + n); off += n; return s; };
const SIZES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

// skips one value of type t, returns nothing (the raw bytes are sliced by the caller)
function skipValue(t) {
  if (t === 8) { str(); return; }
  if (t === 9) {
    const et = u32(), n = Number(u64());
    for (let i = 0; i < n; i++) skipValue(et);
    return;
  }
  if (!(t in SIZES)) throw new Error(`unknown GGUF value type ${t}`);
  off += SIZES[t];
}

if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${inPath}: not a GGUF file`);
off = 4;
const version = u32();
const nTensors = u64(), nKv = Number(u64());
const kvs = [];   // { key, raw } with raw = type + value bytes
let alignment = 32;
for (let i = 0; i < nKv; i++) {
  const key = str();
  const start = off;
  const t = u32();
  if (key === 'general.alignment') alignment = buf.readUInt32LE(off);
  skipValue(t);
  kvs.push({ key, raw: buf.subarray(start, off) });
}
const infoStart = off;
for (let i = 0n; i < nTensors; i++) {
  str();
  const nd = u32();
  off += 8 * nd + 4 + 8;
}
const infos = buf.subarray(infoStart, off);
const dataStart = Math.ceil(off / alignment) * alignment;

function encode(type, value) {
  if (type === 'i32s') {
    const vals = value.split(',').map(Number);
    const b = Buffer.alloc(4 + 4 + 8 + 4 * vals.length);
    b.writeUInt32LE(9, 0);  // array
    b.writeUInt32LE(5, 4);  // of i32
    b.writeBigUInt64LE(BigInt(vals.length), 8);
    vals.forEach((v, i) => b.writeInt32LE(v, 16 + 4 * i));
    return b;
  }
  const b = Buffer.alloc(4 + (type === 'str' ? 8 + Buffer.byteLength(value) : 4));
  const codes = { u32: 4, i32: 5, f32: 6, bool: 7, str: 8 };
  if (!(type in codes)) throw new Error(`--set: type ${type} (u32, i32, f32, bool, str, i32s)`);
  b.writeUInt32LE(codes[type], 0);
  if (type === 'u32') b.writeUInt32LE(Number(value), 4);
  else if (type === 'i32') b.writeInt32LE(Number(value), 4);
  else if (type === 'f32') b.writeFloatLE(Number(value), 4);
  else if (type === 'bool') return Buffer.concat([b.subarray(0, 4), Buffer.from([value === 'true' || value === '1' ? 1 : 0])]);
  else { b.writeBigUInt64LE(BigInt(Buffer.byteLength(value)), 4); b.write(value, 12); }
  return b;
}

for (let i = 0; i < args.length; i += 2) {
  const [opt, spec] = [args[i], args[i + 1]];
  if (opt === '--drop') {
    const at = kvs.findIndex((k) => k.key === spec);
    if (at < 0) throw new Error(`--drop: no key ${spec}`);
    kvs.splice(at, 1);
  } else if (opt === '--set') {
    const m = /^([^=]+)=([a-z0-9]+):(.*)$/.exec(spec || '');
    if (!m) throw new Error(`--set KEY=TYPE:VALUE, not ${spec}`);
    const raw = encode(m[2], m[3]);
    const at = kvs.findIndex((k) => k.key === m[1]);
    if (at >= 0) kvs[at].raw = raw;
    else kvs.push({ key: m[1], raw });
  } else {
    throw new Error(`unknown option ${opt}`);
  }
}

const parts = [];
const head = Buffer.alloc(24);
head.write('GGUF', 0, 'latin1');
head.writeUInt32LE(version, 4);
head.writeBigUInt64LE(nTensors, 8);
head.writeBigUInt64LE(BigInt(kvs.length), 16);
parts.push(head);
for (const k of kvs) {
  const kb = Buffer.alloc(8 + Buffer.byteLength(k.key));
  kb.writeBigUInt64LE(BigInt(Buffer.byteLength(k.key)), 0);
  kb.write(k.key, 8);
  parts.push(kb, k.raw);
}
parts.push(infos);
let size = parts.reduce((s, p) => s + p.length, 0);
parts.push(Buffer.alloc(Math.ceil(size / alignment) * alignment - size));
parts.push(buf.subarray(dataStart));
fs.writeFileSync(outPath, Buffer.concat(parts), { flag: 'wx' });
