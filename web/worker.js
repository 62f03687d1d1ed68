// web/worker.js - the page's worker: it runs ggufmap's plan and fit
// (ggufmap.wasm, built by make web) and is their network.
//
// Data structure.  The transport that src/byte_source_web.c calls through
// web/library_ggufmap.js: per file (an id from the C side) at most one
// request in flight, kept with its body stream and the unread rest of the
// last chunk; the files picked from disk, by name; and this page's copy of
// the bytes fetched so far, per URL the run from byte 0 (the header bytes
// only: each command of a check reopens the model, and the page answers it
// from here instead of the network, as the command line's header cache
// does).
//
// Workload.  Messages from the page: "files" (picked files), "run" (argv
// of one command).  Commands run one at a time; each answers with its exit
// status, its stdout and stderr, and what it cost on the network.  Bodies
// are read as the C reader asks, chunk by chunk, so a server that ignores
// Range is never read past what the header needs; a picked file is read in
// slices (FileReaderSync), never whole.
'use strict';

importScripts('ggufmap.js');

const NETWORK_ERROR = 'no answer: the network failed, or the server does not let this page read it (CORS)';

// ---------------------------------------------------------------------------
// This page's copy of header bytes
// ---------------------------------------------------------------------------

const copies = new Map(); // url -> {size, etag, bytes, n, complete}
const MAX_COPIES = 64;

function copyFor(url, size, etag) {
  let c = copies.get(url);
  if (c && (c.size !== size || c.etag !== etag)) c = null; // the file changed: start again
  if (!c) {
    if (copies.size >= MAX_COPIES) copies.delete(copies.keys().next().value);
    c = { size, etag, bytes: new Uint8Array(65536), n: 0, complete: false };
    copies.set(url, c);
  }
  return c;
}

function append(c, chunk) {
  if (c.n + chunk.length > c.bytes.length) {
    const grown = new Uint8Array(Math.max(c.bytes.length * 2, c.n + chunk.length));
    grown.set(c.bytes.subarray(0, c.n));
    c.bytes = grown;
  }
  c.bytes.set(chunk, c.n);
  c.n += chunk.length;
}

// ---------------------------------------------------------------------------
// The transport
// ---------------------------------------------------------------------------

const live = new Map(); // file id -> request
const picked = new Map(); // name -> File
const cost = { requests: 0, bytes: 0, fileBytes: 0 };
const exchanges = []; // per network request: when it was sent and when its answer came (this run's)

// Round trips: the longest chain of requests each sent after the answer to
// the one before it came (requests sent together count once).
function roundTrips(list) {
  const depth = [];
  list.forEach((x, i) => {
    depth[i] = 1 + Math.max(0, ...list.slice(0, i).map((q, k) => (q.answered <= x.sent ? depth[k] : 0)));
  });
  return Math.max(0, ...depth);
}

function parseRange(text) {
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(text || '');
  if (!m) return null;
  return { first: +m[1], last: +m[2], total: m[3] === '*' ? null : +m[3] };
}

function retryAfter(text) {
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return +text.trim();
  const when = Date.parse(text);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

// An answer made from this page's copy: what the server sent before.
function fromCopy(r, c) {
  const whole = r.end === 0;
  const stop = whole ? c.n : Math.min(r.end, c.n);
  r.body = c.bytes.slice(r.start, stop);
  if (whole) return { status: 200, hasLength: true, length: c.n, etag: c.etag, fromCache: true };
  return {
    status: 206, hasRange: true, rangeFirst: r.start, rangeLast: stop - 1, rangeTotal: c.size, totalKnown: true,
    hasLength: true, length: stop - r.start, etag: c.etag, fromCache: true,
  };
}

// The answer's status and headers; the body is read later (read()).
async function answer(r) {
  const c = copies.get(r.url);
  if (c && ((r.end === 0 && c.complete) || (r.end > 0 && c.size !== null && r.start < c.n))) return fromCopy(r, c);
  r.controller = new AbortController();
  const timer = setTimeout(() => r.controller.abort(), r.timeoutS * 1000);
  const headers = r.end > 0 ? { Range: `bytes=${r.start}-${r.end - 1}` } : {};
  cost.requests++;
  const exchange = { sent: performance.now(), answered: Infinity };
  exchanges.push(exchange);
  let res;
  try {
    res = await fetch(r.url, { headers, signal: r.controller.signal, cache: 'no-store', credentials: 'omit',
                               mode: 'cors', redirect: 'follow' });
  } catch (e) {
    return { status: 0, message: r.controller.signal.aborted ? `no answer for ${r.timeoutS} s (timeout)` : NETWORK_ERROR };
  } finally {
    clearTimeout(timer);
    exchange.answered = performance.now();
  }
  const h = res.headers, range = parseRange(h.get('Content-Range'));
  const length = h.get('Content-Length');
  const a = {
    status: res.status, etag: h.get('ETag') || '', retryAfter: retryAfter(h.get('Retry-After')),
    hasRange: !!range, rangeFirst: range ? range.first : 0, rangeLast: range ? range.last : 0,
    rangeTotal: range && range.total !== null ? range.total : 0, totalKnown: !!range && range.total !== null,
    hasLength: length !== null && /^\d+$/.test(length), length: length !== null ? +length : 0,
  };
  if (res.ok && res.body) {
    r.reader = res.body.getReader();
    // keep the bytes when they continue this page's copy of the file
    const size = a.status === 206 ? (a.totalKnown ? a.rangeTotal : null) : a.hasLength ? a.length : null;
    const first = a.status === 206 ? a.rangeFirst : 0;
    if (a.status === 200 || a.status === 206) {
      const copy = copyFor(r.url, size, a.etag);
      if (first === copy.n) r.copy = copy;
    }
  }
  return a;
}

function begin(id, url, start, end, timeoutS) {
  const r = { key: `${url}\n${start}\n${end}`, url, start, end, timeoutS, body: null, reader: null, copy: null };
  r.answer = answer(r);
  live.set(id, r);
  return r;
}

function stop(id) {
  const r = live.get(id);
  if (!r) return;
  live.delete(id);
  if (r.controller) r.controller.abort();
  if (r.reader) r.reader.cancel().catch(() => {});
}

async function nextChunk(r) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no bytes for ${r.timeoutS} s (timeout)`)), r.timeoutS * 1000);
  });
  try {
    return await Promise.race([r.reader.read(), late]);
  } catch (e) {
    throw new Error(e && e.name === 'AbortError' ? 'the transfer was stopped' : (e && e.message) || String(e));
  } finally {
    clearTimeout(timer);
  }
}

const transport = {
  prefetch(id, url, start, end, timeoutS) {
    if (!live.has(id)) begin(id, url, start, end, timeoutS);
  },
  async request(id, url, start, end, timeoutS) {
    let r = live.get(id);
    if (!r || r.key !== `${url}\n${start}\n${end}` || r.taken) {
      stop(id);
      r = begin(id, url, start, end, timeoutS);
    }
    r.taken = true;
    return r.answer;
  },
  // Up to cap bytes of the body: a Uint8Array, or null at its end.
  async read(id, cap) {
    const r = live.get(id);
    if (!r) return null;
    if (!r.body || r.body.length === 0) {
      if (!r.reader) return null;
      const { value, done } = await nextChunk(r);
      if (done) {
        if (r.copy && r.end === 0) r.copy.complete = true;
        r.reader = null;
        return null;
      }
      cost.bytes += value.length;
      if (r.copy) {
        if (r.copy.n + value.length <= 1 << 30) append(r.copy, value);
        else r.copy = null;
        if (r.copy && r.copy.size !== null && r.copy.n >= r.copy.size) r.copy.complete = true;
      }
      r.body = value;
    }
    const chunk = r.body.subarray(0, cap);
    r.body = r.body.subarray(chunk.length);
    return chunk;
  },
  stop,
  fileSize(name) {
    const f = picked.get(name);
    return f ? f.size : -1;
  },
  fileRead(name, start, n) {
    const f = picked.get(name);
    if (!f) throw new Error('the file is no longer there');
    const bytes = new Uint8Array(new FileReaderSync().readAsArrayBuffer(f.slice(start, start + n)));
    cost.fileBytes += bytes.length;
    return bytes;
  },
};

// ---------------------------------------------------------------------------
// The commands
// ---------------------------------------------------------------------------

let output = { out: [], err: [] };
let ggufmap = null;

function start(env) {
  ggufmap = createGgufmap({
    transport,
    print: (line) => output.out.push(line),
    printErr: (line) => output.err.push(line),
    preRun: [(M) => Object.assign(M.ENV, env)],
  });
}

async function run(argv) {
  const M = await ggufmap;
  const strings = argv.map((s) => {
    const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
    M.stringToUTF8(s, p, n);
    return p;
  });
  const array = M._malloc(4 * strings.length);
  strings.forEach((p, i) => { M.HEAP32[(array >> 2) + i] = p; });
  output = { out: [], err: [] };
  exchanges.length = 0;
  const before = { ...cost };
  const t0 = performance.now();
  let rc;
  try {
    rc = await M.ccall('ggufmap_web_run', 'number', ['number', 'number'], [strings.length, array], { async: true });
  } catch (e) {
    rc = 2;
    output.err.push(`ggufmap ${argv[0]}: the page failed: ${(e && e.message) || e}`);
  }
  strings.forEach((p) => M._free(p));
  M._free(array);
  const text = (lines) => (lines.length ? lines.join('\n') + '\n' : '');
  return {
    rc, stdout: text(output.out), stderr: text(output.err), ms: performance.now() - t0, memory: M.HEAP8.length,
    cost: { requests: cost.requests - before.requests, bytes: cost.bytes - before.bytes,
            fileBytes: cost.fileBytes - before.fileBytes, roundTrips: roundTrips(exchanges) },
  };
}

async function describe() {
  const M = await ggufmap;
  const choices = (cmd, opt) => M.ccall('ggufmap_web_choices', 'string', ['string', 'string'], [cmd, opt]);
  return {
    version: M.ccall('ggufmap_web_version', 'string', [], []),
    choices: { ctk: choices('fit', '-ctk'), ctv: choices('fit', '-ctv'), fa: choices('fit', '-fa'),
               cpu: choices('fit', '--cpu'), sm: choices('fit', '-sm') },
  };
}

// One message at a time: a command waits for the one before it.
let queue = Promise.resolve();
self.onmessage = (e) => {
  const m = e.data;
  queue = queue.then(async () => {
    if (m.type === 'start') {
      start(m.env || {});
      self.postMessage({ id: m.id, type: 'ready', ...(await describe()) });
    } else if (m.type === 'files') {
      picked.clear();
      for (const f of m.files) picked.set(f.name, f);
      self.postMessage({ id: m.id, type: 'files' });
    } else if (m.type === 'run') {
      self.postMessage({ id: m.id, type: 'done', ...(await run(m.argv)) });
    }
  }).catch((err) => self.postMessage({ id: m.id, type: 'error', message: String((err && err.message) || err) }));
};
