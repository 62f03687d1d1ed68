// web/app.js - the page: the form and its state in the URL, the commands a
// check runs in the worker (web/worker.js: ggufmap's own plan and fit,
// compiled to WebAssembly), and what their JSON documents say, rendered.
//
// The page computes no figure of its own: every number comes from the
// ggufmap.fit/1 and ggufmap.plan/1 documents the commands print, so the page
// shows what `ggufmap fit --json` shows for the same arguments (the
// ggufmap command line is printed beside the result).  What the page adds
// is the argument list (from the form) and the llama.cpp command line that
// runs what was modelled.
'use strict';

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------
// The worker
// ---------------------------------------------------------------------------

const worker = new Worker('worker.js');
const waiting = new Map();
let lastId = 0;

function post(message) {
  const id = ++lastId;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    worker.postMessage({ ...message, id });
  });
}

worker.onmessage = (e) => {
  const w = waiting.get(e.data.id);
  if (!w) return;
  waiting.delete(e.data.id);
  if (e.data.type === 'error') w.reject(new Error(e.data.message));
  else w.resolve(e.data);
};
worker.onerror = (e) => {
  say(`The page's worker failed: ${e.message || 'it could not start'}`);
  for (const w of waiting.values()) w.reject(new Error('the worker failed'));
  waiting.clear();
};

// ---------------------------------------------------------------------------
// Words and numbers
// ---------------------------------------------------------------------------

// ggufmap_format_bytes: the largest binary unit that keeps the number >= 1.
function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let u = 0, v = n;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? `${n} B` : `${v.toFixed(2)} ${units[u]}`;
}

// As a POSIX shell reads it (tools/util.c's shell_quote).
function quote(word) {
  return /^[A-Za-z0-9._\/:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
const line = (argv) => argv.map(quote).join(' ');

function say(text) { $('status').textContent = text; }

function cell(tr, text, { bytes: exact, head } = {}) {
  const td = document.createElement(head ? 'th' : 'td');
  if (head) td.scope = 'row';
  td.textContent = text;
  if (exact !== undefined && exact !== null) {
    td.dataset.bytes = String(exact);
    td.title = `${exact.toLocaleString('en')} bytes`;
    td.className = 'num';
  }
  tr.appendChild(td);
  return td;
}

function table(el, caption, columns, rows) {
  el.replaceChildren();
  const cap = document.createElement('caption');
  cap.textContent = caption;
  el.appendChild(cap);
  const head = el.createTHead().insertRow();
  for (const c of columns) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = c;
    head.appendChild(th);
  }
  const body = el.createTBody();
  for (const r of rows) r(body.insertRow());
}

// ---------------------------------------------------------------------------
// The state: the form <-> the URL
// ---------------------------------------------------------------------------

const FIELDS = ['m', 'hw', 'ram', 'vram', 'ts', 'sm', 'mg', 'cpu', 'c', 'np', 'ctk', 'ctv', 'fa', 'ngl', 'ncmoe', 'mtp'];
let picked = []; // File objects: the model when modelSource is 'file'
let modelSource = 'text';
let hub = ''; // another hub than huggingface.co (?hub=URL): the HF_ENDPOINT of the commands

function readForm() {
  const f = $('ask');
  const s = {};
  for (const k of FIELDS) {
    if (k === 'hw') s.hw = f.querySelector('input[name=hw]:checked').value;
    else if (k === 'mtp') s.mtp = $('mtp').checked ? '1' : '';
    else if (k === 'vram') s.vram = [...f.querySelectorAll('input[name=vram]')].map((i) => i.value.trim()).join(',');
    else if (SPLIT.includes(k) && $('split').hidden) s[k] = '';
    else if (k === 'm') s.m = $('model').value.trim();
    else s[k] = (f.elements[k].value || '').trim();
  }
  return s;
}

function fillForm(s) {
  for (const k of FIELDS) {
    if (!(k in s)) continue;
    if (k === 'hw') { const r = document.querySelector(`input[name=hw][value="${CSS.escape(s.hw)}"]`); if (r) r.checked = true; }
    else if (k === 'mtp') $('mtp').checked = s.mtp === '1';
    else if (k === 'vram') setGpus(s.vram.split(','));
    else if (k === 'm') $('model').value = s.m;
    else if ($('ask').elements[k]) $('ask').elements[k].value = s[k];
  }
  showMachine();
}

// Only what differs from the defaults goes into the link.
const DEFAULTS = { hw: 'mac', ram: '64', vram: '24', sm: 'layer', cpu: 'x86', ctk: 'f16', ctv: 'f16', fa: 'auto', mtp: '' };

function toQuery(s) {
  const q = new URLSearchParams();
  for (const k of FIELDS) if (s[k] && s[k] !== DEFAULTS[k] && !(k === 'm' && modelSource === 'file') &&
                              !(SPLIT.includes(k) && s.vram.split(',').length < 2)) q.set(k, s[k]);
  if (hub) q.set('hub', hub);
  return q.toString();
}

function fromQuery() {
  const q = new URLSearchParams(location.search);
  const s = {};
  for (const k of FIELDS) if (q.has(k)) s[k] = q.get(k);
  hub = q.get('hub') || '';
  return s;
}

function showMachine() {
  const hw = document.querySelector('input[name=hw]:checked').value;
  for (const el of document.querySelectorAll('.when-mac, .when-gpu, .when-cpu')) {
    const on = el.classList.contains(`when-${hw}`);
    el.hidden = !on;
    for (const input of el.querySelectorAll('input, select, button')) input.disabled = !on;
  }
  showGpus();
}

// ---------------------------------------------------------------------------
// The GPUs: one row each (#gpu-list), CUDA0 first, as llama.cpp numbers them
// ---------------------------------------------------------------------------

const MAX_GPUS = 16; // GGUFMAP_MAX_GPUS (GGML_CUDA_MAX_DEVICES)
const SPLIT = ['ts', 'sm', 'mg']; // how the layers go to the GPUs: with two or more only

const gpuRows = () => [...$('gpu-list').children];

function addGpu(gb, focus) {
  const li = document.createElement('li');
  li.className = 'gpu';
  const input = document.createElement('input');
  Object.assign(input, { name: 'vram', type: 'number', min: '1', step: '1', value: gb || '' });
  input.setAttribute('list', 'vram-sizes');
  const label = document.createElement('label');
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.className = 'small remove';
  remove.textContent = 'Remove';
  remove.addEventListener('click', () => {
    const next = li.nextElementSibling || li.previousElementSibling;
    li.remove();
    showGpus();
    (next.querySelector('button.remove') || next.querySelector('input')).focus();
  });
  li.append(label, ' ', input, ' ', remove);
  $('gpu-list').append(li);
  showGpus();
  if (focus) input.focus();
}

// The rows as the list says: the first keeps its field (#vram0), the others
// are made again.
function setGpus(sizes) {
  for (const li of gpuRows().slice(1)) li.remove();
  $('vram0').value = sizes[0] || '';
  for (const gb of sizes.slice(1, MAX_GPUS)) addGpu(gb, false);
  showGpus();
}

// Labels by llama.cpp's device names once there are two; the split fields
// and the remove buttons only then.
function showGpus() {
  const rows = gpuRows(), several = rows.length > 1;
  const gpuOn = document.querySelector('input[name=hw]:checked').value === 'gpu';
  rows.forEach((li, i) => {
    const input = li.querySelector('input'), label = li.querySelector('label');
    input.id = `vram${i}`;
    label.htmlFor = input.id;
    label.textContent = several ? `CUDA${i} memory, GB` : 'GPU memory, GB';
    const remove = li.querySelector('button.remove');
    if (remove) remove.setAttribute('aria-label', `Remove CUDA${i}`);
  });
  $('split').hidden = !several;
  for (const el of $('split').querySelectorAll('input, select')) el.disabled = !several || !gpuOn;
  $('add-gpu').disabled = !gpuOn || rows.length >= MAX_GPUS;
}

// ---------------------------------------------------------------------------
// The commands a check runs
// ---------------------------------------------------------------------------

const SHARD = /-(\d{5})-of-(\d{5})\.gguf$/i;

function modelArgs(s) {
  if (modelSource === 'file') {
    const first = picked.find((f) => SHARD.test(f.name) && +SHARD.exec(f.name)[1] === 1) || picked[0];
    return first ? [first.name] : [];
  }
  if (!s.m) return [];
  return /^(hf|https?):\/\//i.test(s.m) ? [s.m] : ['-hf', s.m];
}

// llama.cpp's flags, as the form gives them: placement (plan and fit take
// them) and context (fit only).
function placementFlags(s) {
  const f = [...splitFlags(s)];
  if (s.hw !== 'cpu' && s.ngl) f.push('-ngl', s.ngl);
  if (s.ncmoe && s.ncmoe !== '0') f.push('--n-cpu-moe', s.ncmoe);
  if (s.mtp) f.push('--mtp');
  return f;
}

function contextFlags(s) {
  const f = [];
  if (s.c && s.c !== '0') f.push('-c', s.c);
  if (s.np && s.np !== '1') f.push('-np', s.np);
  if (s.ctk && s.ctk !== 'f16') f.push('-ctk', s.ctk);
  if (s.ctv && s.ctv !== 'f16') f.push('-ctv', s.ctv);
  if (s.fa && s.fa !== 'auto') f.push('-fa', s.fa);
  return f;
}

// The GPUs: their memory sizes (GB) as ggufmap's device and limit flags.
// One GPU is `--device cuda` (CUDA0) with its limit; several are named as
// llama.cpp names them, in its order, each with its own limit:
// `--device CUDA0,CUDA1 --limit CUDA0=24G,CUDA1=12G` (docs/devices.md).
const gpuNames = (sizes) => sizes.map((_, i) => `CUDA${i}`);

function gpuArgs(sizes) {
  if (sizes.length === 1) return { device: ['--device', 'cuda'], limit: ['--limit', `${sizes[0]}G`] };
  const names = gpuNames(sizes);
  return { device: ['--device', names.join(',')], limit: ['--limit', sizes.map((gb, i) => `${names[i]}=${gb}G`).join(',')] };
}

// How the layers go to several GPUs: llama.cpp's -ts, -sm, -mg, spelled the
// same for ggufmap and llama.cpp (the defaults left out).
function splitFlags(s) {
  const f = [];
  if (s.hw !== 'gpu' || s.vram.split(',').length < 2) return f;
  if (s.ts) f.push('-ts', s.ts);
  if (s.sm && s.sm !== 'layer') f.push('-sm', s.sm);
  if (s.mg && s.mg !== '0') f.push('-mg', s.mg);
  return f;
}

// The machine: ggufmap's device and the limit its memory sets (GB as
// binary GiB, as the machines are sold: a "64 GB" Mac has 64 GiB).
function machineArgs(s) {
  if (s.hw === 'mac') return { device: ['--device', 'metal'], limit: ['--mem', `${s.ram}G`] };
  const cpu = ['--cpu', s.cpu || 'x86'];
  if (s.hw === 'gpu') {
    const g = gpuArgs(s.vram.split(','));
    return { device: [...g.device, ...cpu], limit: g.limit };
  }
  return { device: ['--device', 'cpu', ...cpu], limit: ['--mem', `${s.ram}G`] };
}

function commands(s) {
  const model = modelArgs(s), m = machineArgs(s), place = placementFlags(s);
  const fit = ['fit', ...model, ...m.device, ...place, ...contextFlags(s), ...m.limit, '--max-ctx'];
  return {
    fit: [...fit, '--json'],
    plan: ['plan', ...model, ...m.device, ...place, '--json'],
    svg: ['plan', ...model, ...m.device, ...place, '--svg', '-'],
    shown: ['ggufmap', ...fit],
  };
}

// llama-server running what was modelled (ctx: another -c, e.g. the largest
// that fits).
function llamaCommand(s, ctx) {
  const argv = ['llama-server'];
  const m = modelArgs(s);
  if (modelSource === 'file') argv.push('-m', m[0]);
  else if (m[0] === '-hf') argv.push('-hf', m[1], '--no-mmproj');
  else if (/^hf:\/\//i.test(m[0])) {
    const hfm = /^hf:\/\/([^/]+\/[^/@]+)(?:@[^/]+)?\/(.+)$/i.exec(m[0]);
    if (hfm) argv.push('-hf', hfm[1], '-hff', hfm[2], '--no-mmproj');
    else argv.push('-mu', m[0]);
  } else argv.push('-mu', m[0]);
  const flags = contextFlags(s).filter((x, i, a) => !(ctx && (x === '-c' || a[i - 1] === '-c')));
  if (ctx) argv.push('-c', String(ctx));
  argv.push(...flags);
  // the GPUs by name when there are several (llama.cpp's default is every GPU it sees)
  const gpus = s.hw === 'gpu' ? s.vram.split(',') : [];
  if (gpus.length > 1) argv.push('-dev', gpuNames(gpus).join(','), ...splitFlags(s));
  // -ngl spelled out: llama.cpp's default is auto (ggufmap models all)
  argv.push('-ngl', s.hw === 'cpu' ? '0' : s.ngl || 'all');
  if (s.ncmoe && s.ncmoe !== '0') argv.push('--n-cpu-moe', s.ncmoe);
  if (s.mtp) argv.push('--spec-type', 'draft-mtp');
  // llama.cpp's default -fit on changes unset flags to fit the free memory;
  // off, it runs what was modelled
  argv.push('-fit', 'off');
  return line(argv);
}

// The file a repack writes, named as plan's advice names it.
function repackCommand(s, fitJson) {
  const name = modelSource === 'file' ? modelArgs(s)[0] : (fitJson.model.split(/[?#]/)[0].split('/').pop() || 'MODEL.gguf');
  const out = name.replace(SHARD, '').replace(/\.gguf$/i, '') + '-repacked.gguf';
  const m = machineArgs(s);
  return line(['ggufmap', 'repack', name, ...m.device, ...placementFlags(s), '-o', out]);
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

// ", 1.81 GiB to spare" or ", 2.00 GiB over"
const margin = (total, limit) => (total > limit ? `, ${bytes(total - limit)} over` : `, ${bytes(limit - total)} to spare`);

function renderVerdict(s, fit) {
  const v = fit.verdict;
  const mac = s.hw === 'mac';
  const h = $('verdict');
  renderChecks(fit);
  if (fit.refusal) {
    h.textContent = `✗ llama.cpp ${fit.refusal.aborts ? 'aborts' : 'refuses'} this context`;
    h.dataset.fits = 'false';
    $('verdict-detail').textContent = fit.refusal.message;
    return;
  }
  h.dataset.fits = String(v.fits);
  // several checks (GPUs; a Mac's working set and its RAM): the first that
  // fails names the verdict, or the first; each is listed under it
  const several = v.checks.length > 1;
  const named = (several && v.checks.find((c) => !c.fits)) || v;
  h.textContent = `${v.fits ? '✓ Fits' : '✗ Does not fit'}: ${bytes(named.total)} of ${bytes(named.limit)} on ${named.device}` +
    margin(named.total, named.limit);
  h.dataset.total = String(named.total);
  h.dataset.limit = String(named.limit);
  const gpus = s.vram.split(',');
  const limitWhat = mac ? `the GPU working set macOS gives a ${s.ram} GB Mac by default: ${bytes(v.limit)}`
                  : s.hw === 'cpu' ? `the machine's ${s.ram} GB of RAM: ${bytes(v.limit)}`
                  : gpus.length > 1 ? `each GPU's memory: ${gpuNames(gpus).map((n, i) => `${n} ${gpus[i]} GB`).join(', ')}`
                  : `the GPU's ${gpus[0]} GB: ${bytes(v.limit)}`;
  const planned = !v.fits && v.fits_planned
    ? ` Repacked so that llama.cpp maps nothing foreign, ${several ? 'every GPU fits' : `it needs ${bytes(v.total_planned)}: it fits`}.` : '';
  const alone = s.hw === 'gpu' && gpus.length > 1 && s.sm === 'none' ? ` With -sm none llama.cpp uses CUDA${s.mg || 0} alone.` : '';
  $('verdict-detail').textContent = `The limit is ${limitWhat}.${alone} ` +
    `${fit.architecture}, context ${fit.context ? fit.context.n_ctx : '–'} cells.${planned}`;
}

// Each check, when there are several (each GPU's; a Mac's working set and
// its RAM): its total against its limit.
function renderChecks(fit) {
  const ul = $('checks');
  ul.replaceChildren();
  const checks = fit.refusal ? [] : fit.verdict.checks;
  ul.hidden = checks.length < 2;
  if (ul.hidden) return;
  for (const c of checks) {
    const li = document.createElement('li');
    const b = document.createElement('strong');
    b.textContent = `${c.device}: ${c.fits ? 'fits' : 'does not fit'}`;
    li.append(b, `, ${bytes(c.total)} of ${bytes(c.limit)}${margin(c.total, c.limit)}`);
    Object.assign(li.dataset, { device: c.device, fits: String(c.fits), total: String(c.total), limit: String(c.limit) });
    li.title = `${c.total.toLocaleString('en')} of ${c.limit.toLocaleString('en')} bytes`;
    ul.append(li);
  }
}

function renderMaxCtx(s, fit) {
  const el = $('maxctx');
  el.replaceChildren();
  if (fit.max_ctx === null) return;
  el.dataset.maxCtx = String(fit.max_ctx);
  if (fit.max_ctx === 0) {
    el.textContent = 'Not even a context of 256 fits' +
      (fit.max_ctx_planned > 0 ? `; once repacked, up to -c ${fit.max_ctx_planned} does.` : '.');
  } else {
    el.append('The largest context that fits: ');
    const code = document.createElement('code');
    code.textContent = `-c ${fit.max_ctx}`;
    el.append(code);
    if (fit.max_ctx_planned > fit.max_ctx) el.append(` (${fit.max_ctx_planned} once repacked)`);
    el.append('.');
  }
}

function renderCommands(s, fit, cmds) {
  const fits = fit.verdict.fits && !fit.refusal;
  let text = llamaCommand(s);
  if (!fits && fit.max_ctx > 0) text += `\n# fits with the largest context that fits:\n${llamaCommand(s, fit.max_ctx)}`;
  $('llama-cmd').textContent = text;
  $('ggufmap-cmd').textContent = line(cmds.shown);
}

function renderAdvice(s, fit, plan) {
  const ul = $('advice');
  ul.replaceChildren();
  for (const g of fit.verdict.fits || fit.refusal ? [] : fit.suggestions) {
    const li = document.createElement('li');
    const repack = g.flags === 'repack';
    li.append(repack ? 'Repack the model so that llama.cpp maps nothing foreign' : `Run llama.cpp with ${g.flags}`);
    // several GPUs: each one's total (fit's suggestions[].devices)
    const each = g.devices.length > 1 ? g.devices.map((d) => `${d.device} ${bytes(d.total)}`).join(', ') : bytes(g.total);
    li.append(`: ${each}${g.fits ? ', fits' : ', still does not fit'}.`);
    li.dataset.total = String(g.total);
    li.dataset.devices = g.devices.map((d) => `${d.device}=${d.total}`).join(',');
    if (repack) {
      const from = plan && plan.suggestions.find((x) => x.command.startsWith('ggufmap repack'));
      const pre = document.createElement('pre');
      pre.className = 'cmd';
      pre.tabIndex = 0;
      pre.textContent = from ? from.command : `# on a downloaded copy:\n${repackCommand(s, fit)}`;
      li.append(pre);
    }
    ul.append(li);
  }
  $('advice-block').hidden = ul.children.length === 0;
}

function renderDevices(fit) {
  table($('devices'), 'Bytes per device: what llama.cpp allocates (weights as it maps them), and the total once repacked',
        ['device', 'weights', 'KV cache', 'recurrent', 'output', 'compute', 'total', 'repacked'],
        fit.devices.map((d) => (tr) => {
          cell(tr, d.name + (d.exact ? '' : ' (upper bound)'), { head: true });
          for (const k of ['weights', 'kv', 'rs', 'output_max', 'compute', 'total', 'total_planned']) cell(tr, bytes(d[k]), { bytes: d[k] });
        }));
  table($('buffers'), 'Every buffer llama.cpp creates for the weights and the context',
        ['kind', 'device', 'buffer', 'bytes', 'what'],
        fit.buffers.map((b) => (tr) => {
          cell(tr, b.kind + (b.context === 'mtp' ? ' (MTP)' : ''), { head: true });
          cell(tr, b.device);
          cell(tr, b.buft);
          cell(tr, bytes(b.bytes) + (b.exact ? '' : ' (bound)'), { bytes: b.bytes });
          cell(tr, b.what);
        }));
}

function renderPlan(plan) {
  const mapped = plan.buffers.filter((b) => b.mapped);
  const foreign = mapped.reduce((n, b) => n + b.foreign_bytes, 0);
  $('repack-note').textContent = foreign
    ? `Here llama.cpp maps ${bytes(foreign)} of foreign tensors; a repack (ggufmap repack) reorders the file so that it maps none.`
    : 'Here no buffer maps a foreign tensor.';
  table($('mapped'), 'The buffers llama.cpp maps: span, own tensors and foreign tensors inside the span',
        ['buffer', 'shard', 'span', 'own', 'foreign', 'largest foreign tensors'],
        plan.buffers.map((b) => (tr) => {
          cell(tr, b.name, { head: true });
          cell(tr, b.mapped ? String(b.shard + 1) : 'allocated');
          cell(tr, bytes(b.size), { bytes: b.size });
          cell(tr, bytes(b.own_bytes), { bytes: b.own_bytes });
          cell(tr, bytes(b.foreign_bytes), { bytes: b.foreign_bytes });
          cell(tr, b.foreign.slice(0, 3).map((t) => `${t.name} (${bytes(t.bytes)}, ${t.owner || '–'})`).join(', ') || 'none');
        }));
}

let svgUrl = null;
function renderPicture(svgText, plan) {
  if (svgUrl) URL.revokeObjectURL(svgUrl);
  svgUrl = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  const img = $('picture');
  img.src = svgUrl;
  const foreign = plan.buffers.reduce((n, b) => n + b.foreign_bytes, 0);
  img.alt = `The plan drawn: ${plan.n_shards} shard${plan.n_shards === 1 ? '' : 's'}, ${plan.buffers.length} buffers, ` +
    `${bytes(foreign)} of foreign tensors mapped; the table below has the same figures.`;
  const cap = $('picture-caption');
  cap.replaceChildren('Each strip is a shard; under it each mapped buffer\'s span, foreign bytes marked. ');
  const a = document.createElement('a');
  a.href = svgUrl;
  a.download = 'ggufmap-plan.svg';
  a.textContent = 'The figure as SVG';
  cap.append(a);
}

// ---------------------------------------------------------------------------
// A check
// ---------------------------------------------------------------------------

let running = false;
window.__ggufmap = { runs: [] }; // what the commands answered, for tests and the curious

async function run(argv) {
  const r = await post({ type: 'run', argv });
  window.__ggufmap.runs.push({ argv, rc: r.rc, stdout: r.stdout, stderr: r.stderr, cost: r.cost, ms: r.ms, memory: r.memory });
  return r;
}

function fail(text) {
  $('result').hidden = true;
  $('failure').hidden = false;
  $('error').textContent = text;
  $('failure').querySelector('h2').focus();
}

async function check() {
  if (running) return;
  const s = readForm();
  if (modelArgs(s).length === 0) {
    say('Give a model: a Hugging Face name, a URL, or files.');
    $('model').focus();
    return;
  }
  const noSize = s.hw === 'gpu' && gpuRows().find((li) => !/^\d+(\.\d+)?$/.test(li.querySelector('input').value.trim()));
  if (noSize) {
    say(`Give ${gpuRows().length > 1 ? 'each' : 'the'} GPU's memory in GB.`);
    noSize.querySelector('input').focus();
    return;
  }
  running = true;
  $('go').disabled = true;
  history.replaceState(null, '', `${location.pathname}?${toQuery(s)}`);
  const cmds = commands(s);
  const started = performance.now();
  const cost = { requests: 0, bytes: 0, fileBytes: 0, roundTrips: 0 };
  const add = (r) => { for (const k in cost) cost[k] += r.cost[k]; };
  try {
    say('Reading the header…');
    const f = await run(cmds.fit);
    add(f);
    if (f.rc !== 0 && f.rc !== 3) return fail(f.stderr.trim() || `ggufmap fit exited ${f.rc}`);
    const fit = JSON.parse(f.stdout);
    window.__ggufmap.fit = fit;
    $('failure').hidden = true;
    $('result').hidden = false;
    renderVerdict(s, fit);
    renderMaxCtx(s, fit);
    renderCommands(s, fit, cmds);
    renderDevices(fit);
    renderAdvice(s, fit, null);
    $('verdict').focus();
    say('Planning the mappings…');
    const p = await run(cmds.plan);
    add(p);
    if (p.rc === 0 || p.rc === 3) {
      const plan = JSON.parse(p.stdout);
      window.__ggufmap.plan = plan;
      renderPlan(plan);
      renderAdvice(s, fit, plan);
      const g = await run(cmds.svg);
      add(g);
      if (g.rc === 0) renderPicture(g.stdout, plan);
    }
    const ms = Math.round(performance.now() - started);
    $('cost').textContent = (cost.requests ? `Read ${bytes(cost.bytes)} in ${cost.requests} request${cost.requests === 1 ? '' : 's'}` +
      ` (${cost.roundTrips} round trip${cost.roundTrips === 1 ? '' : 's'})` :
      cost.fileBytes ? `Read ${bytes(cost.fileBytes)} of the files` : 'Read nothing new') + ` in ${ms} ms.`;
    window.__ggufmap.cost = cost;
    say('');
  } catch (e) {
    fail(`The page failed: ${e.message}`);
  } finally {
    running = false;
    $('go').disabled = false;
    window.__ggufmap.done = (window.__ggufmap.done || 0) + 1;
  }
}

// ---------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------

// The words of an option's completion list; `host` (this machine's CPU) and
// -sm row (refused: docs/devices.md) mean nothing in a page.
function fillChoices(select, words, chosen) {
  for (const w of words.split(' ').filter((x) => x && x !== 'host' && !(select.id === 'sm' && x === 'row'))) {
    const o = document.createElement('option');
    o.value = o.textContent = w;
    select.append(o);
  }
  select.value = chosen;
}

async function startPage() {
  const initial = fromQuery();
  const ready = await post({ type: 'start', env: hub ? { HF_ENDPOINT: hub } : {} });
  fillChoices($('ctk'), ready.choices.ctk, 'f16');
  fillChoices($('ctv'), ready.choices.ctv, 'f16');
  fillChoices($('fa'), ready.choices.fa, 'auto');
  fillChoices($('cpu'), ready.choices.cpu, 'x86');
  fillChoices($('sm'), ready.choices.sm, 'layer');
  $('version').textContent = `${ready.version}.` + (hub ? ` Hub: ${hub}.` : '');
  $('version').dataset.version = ready.version;
  fillForm(initial);
  for (const r of document.querySelectorAll('input[name=hw]')) r.addEventListener('change', showMachine);
  $('add-gpu').addEventListener('click', () => addGpu(gpuRows().at(-1).querySelector('input').value, true));
  $('model').addEventListener('input', () => { modelSource = 'text'; });
  $('file').addEventListener('change', async () => {
    picked = [...$('file').files];
    if (!picked.length) return;
    modelSource = 'file';
    await post({ type: 'files', files: picked });
    say(`${picked.length} file${picked.length === 1 ? '' : 's'} picked: ${picked.map((f) => f.name).join(', ')}`);
  });
  $('ask').addEventListener('submit', (e) => { e.preventDefault(); check(); });
  window.__ggufmap.ready = performance.now();
  if (initial.m) check();
}

startPage().catch((e) => say(`The page cannot start: ${e.message}`));
