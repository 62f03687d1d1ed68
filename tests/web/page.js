// page.js: the page in Debian's Chromium, headless, driven by playwright-core
// (pinned, installed by the web.setup test; never a browser download).
// tests/web/page.sh starts the servers and says what is checked.  Every
// expected value comes from the command line (ggufmap, the native build) run
// on the same arguments, or from nginx's access log.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');
const { chromium } = require('playwright-core');

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const hub = opt.models; // the hub's endpoint: hf:// and -hf resolve there, as HF_ENDPOINT
const cliEnv = { ...process.env, HF_ENDPOINT: hub, XDG_CACHE_HOME: path.join(opt.work, 'xdg-cache') };

let passed = 0, failed = 0;
const ok = () => { passed++; };
const bad = (what) => { failed++; console.log(`FAIL: ${what}`); };
const check = (cond, what) => (cond ? ok() : bad(what));

// ---------------------------------------------------------------------------
// The command line, for the expected values
// ---------------------------------------------------------------------------

// `ggufmap ARGV` as the page ran it: exit status, stdout, stderr.  Local
// names are the page's picked files: run where they are.
function cli(argv, cwd) {
  const r = spawnSync(opt.ggufmap, [...argv, ...(argv.some((a) => /^(https?|hf):/.test(a)) || argv.includes('-hf') ? ['--no-cache'] : [])],
                      { cwd, env: cliEnv, encoding: 'utf8', maxBuffer: 1 << 28 });
  return { rc: r.status, stdout: r.stdout, stderr: r.stderr };
}

// The first difference between two JSON documents, the fetch counters aside
// (how many bytes a request brought depends on when the reader stopped it).
function difference(x, y, where = '$') {
  const skip = new Set(['fetched_bytes', 'requests']);
  if (typeof x !== typeof y || Array.isArray(x) !== Array.isArray(y) || (x === null) !== (y === null))
    return `${where}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
  if (Array.isArray(x)) {
    if (x.length !== y.length) return `${where}: ${x.length} elements vs ${y.length}`;
    for (let i = 0; i < x.length; i++) { const d = difference(x[i], y[i], `${where}[${i}]`); if (d) return d; }
    return null;
  }
  if (x && typeof x === 'object') {
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      if (skip.has(k)) continue;
      if (!(k in x) || !(k in y)) return `${where}.${k}: only in ${k in x ? 'the page' : 'the command line'}`;
      const d = difference(x[k], y[k], `${where}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return x === y ? null : `${where}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
}

// Every command the page ran equals the command line's answer.
function sameAsCli(name, runs, cwd) {
  for (const run of runs) {
    const want = cli(run.argv, cwd);
    const what = `${name}: ggufmap ${run.argv.join(' ')}`;
    if (run.rc !== want.rc) { bad(`${what}: the page exited ${run.rc} (${run.stderr.trim()}), the command line ${want.rc} (${want.stderr.trim()})`); continue; }
    if (run.argv.includes('--json')) {
      let d;
      try { d = difference(JSON.parse(run.stdout), JSON.parse(want.stdout)); } catch (e) { d = `not JSON: ${e.message}`; }
      check(!d, `${what}: ${d}`);
    } else {
      check(run.stdout === want.stdout, `${what}: the page's output differs from the command line's`);
    }
  }
}

// ---------------------------------------------------------------------------
// nginx's access log: HOST:PORT "GET /path HTTP/1.1" STATUS BYTES range="R" auth="..."
// ---------------------------------------------------------------------------

function logLines() {
  return fs.readFileSync(opt['access-log'], 'utf8').split('\n').filter(Boolean).map((l) => {
    const m = /^(\S+) "(\S+) (\S+) [^"]*" (\d+) (\d+) range="([^"]*)"/.exec(l);
    return m && { host: m[1], method: m[2], path: m[3], status: +m[4], bytes: +m[5], range: m[6] };
  }).filter(Boolean);
}

// ---------------------------------------------------------------------------
// llama.cpp v0.5.0's options, from its source in the oracle (common/arg.cpp:
// common_arg({"-x", "--long"}, [{"--no-x"},] ...))
// ---------------------------------------------------------------------------

function llamaOptions() {
  const src = execFileSync('git', ['--git-dir', path.join(opt.oracle, 'llama.git'), 'show', 'v0.5.0:common/arg.cpp'],
                           { encoding: 'utf8', maxBuffer: 1 << 26 });
  const names = new Set();
  for (const m of src.matchAll(/common_arg\(\s*\{([^}]*)\}(\s*,\s*\{([^}]*)\})?/g))
    for (const n of `${m[1]} ${m[3] || ''}`.matchAll(/"(-[^"]+)"/g)) names.add(n[1]);
  return names;
}

// The page's llama.cpp command lines use only options llama.cpp defines.
async function llamaFlagsExist(page, name, options) {
  const text = await page.evaluate(() => document.getElementById('llama-cmd').textContent);
  const flags = text.split('\n').filter((l) => l.startsWith('llama-server'))
    .flatMap((l) => l.split(/\s+/)).filter((w) => /^-[-a-z]/.test(w));
  const unknown = flags.filter((f) => !options.has(f));
  check(flags.length > 0 && unknown.length === 0, `${name}: llama.cpp v0.5.0 has no ${unknown.join(', ')} (${text})`);
}

// ---------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------

const query = (o) => new URLSearchParams(o).toString();

async function checkPage(page, params) {
  await page.goto(`${opt.page}?${query(params)}`);
  await page.waitForFunction(() => window.__ggufmap && window.__ggufmap.done >= 1, null, { timeout: 120000 });
  return page.evaluate(() => ({ ...window.__ggufmap, runs: window.__ggufmap.runs }));
}

// The figures on the page are the fit document's.
async function shownAsJson(page, name, fit) {
  const shown = await page.evaluate(() => ({
    fits: document.getElementById('verdict').dataset.fits,
    total: document.getElementById('verdict').dataset.total,
    verdict: document.getElementById('verdict').textContent,
    maxCtx: document.getElementById('maxctx').dataset.maxCtx,
    devices: [...document.querySelectorAll('#devices tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.dataset.bytes)),
    checks: [...document.querySelectorAll('#checks li')].map((li) => ({ ...li.dataset })),
    checksHidden: document.getElementById('checks').hidden,
  }));
  if (fit.refusal) { check(shown.fits === 'false', `${name}: a refused context shown as fitting`); return; }
  // several checks (GPUs, a Mac's working set and RAM): the verdict names the first that fails, and lists each
  const checks = fit.verdict.checks;
  const named = (checks.length > 1 && checks.find((c) => !c.fits)) || fit.verdict;
  check(shown.fits === String(fit.verdict.fits) && shown.total === String(named.total),
        `${name}: the verdict shows ${shown.fits}/${shown.total}, fit says ${fit.verdict.fits}/${named.total}`);
  const wantChecks = checks.length > 1 ? checks.map((c) => ({ device: c.device, fits: String(c.fits), total: String(c.total), limit: String(c.limit) })) : [];
  check(JSON.stringify(shown.checks) === JSON.stringify(wantChecks) && shown.checksHidden === (checks.length < 2),
        `${name}: the GPUs' checks shown ${JSON.stringify(shown.checks)} are not fit's ${JSON.stringify(wantChecks)}`);
  const advice = await page.evaluate(() => [...document.querySelectorAll('#advice li')].map((li) => li.dataset.devices));
  const wantAdvice = fit.verdict.fits ? [] : fit.suggestions.map((g) => g.devices.map((d) => `${d.device}=${d.total}`).join(','));
  check(JSON.stringify(advice) === JSON.stringify(wantAdvice),
        `${name}: the suggestions' totals per GPU shown ${JSON.stringify(advice)} are not fit's ${JSON.stringify(wantAdvice)}`);
  check(/^✓ Fits|^✗ Does not fit/.test(shown.verdict), `${name}: the verdict is not said in words: ${shown.verdict}`);
  check(shown.maxCtx === String(fit.max_ctx), `${name}: largest context shown ${shown.maxCtx}, fit says ${fit.max_ctx}`);
  const want = fit.devices.map((d) => ['weights', 'kv', 'rs', 'output_max', 'compute', 'total', 'total_planned'].map((k) => String(d[k])));
  check(JSON.stringify(shown.devices) === JSON.stringify(want), `${name}: the device table ${JSON.stringify(shown.devices)} is not fit's ${JSON.stringify(want)}`);
}

// Several GPUs: the commands name each GPU with its limit, fit reports each,
// llama.cpp's command line names them and the split, and the form shows a
// row per GPU (the link made them).
async function severalGpus(page, c, got) {
  const names = [...Array(c.gpus).keys()].map((i) => `CUDA${i}`);
  const sizes = c.p.vram.split(',');
  const fitArgv = got.runs[0].argv.join(' ');
  const want = `--device ${names.join(',')}`, limit = `--limit ${names.map((n, i) => `${n}=${sizes[i]}G`).join(',')}`;
  check(fitArgv.includes(want) && fitArgv.includes(limit) && got.runs.every((r) => r.argv.join(' ').includes(want)),
        `${c.name}: the commands lack ${want} or ${limit}: ${fitArgv}`);
  const split = [['ts', '-ts'], ['sm', '-sm'], ['mg', '-mg']].filter(([k]) => c.p[k]).map(([k, f]) => `${f} ${c.p[k]}`);
  check(split.every((f) => got.runs.every((r) => r.argv.join(' ').includes(f))), `${c.name}: the commands lack ${split.join(' ')}: ${fitArgv}`);
  // -sm none: the -mg'th GPU alone (fit reports and checks it only)
  const used = c.p.sm === 'none' ? [names[+(c.p.mg || 0)]] : names;
  const gpus = got.fit.devices.filter((d) => d.gpu).map((d) => d.name);
  check(JSON.stringify(gpus) === JSON.stringify(used) && got.fit.verdict.checks.length === used.length,
        `${c.name}: fit reports the GPUs ${gpus} with ${got.fit.verdict.checks.length} checks`);
  const shown = await page.evaluate(() => ({
    llama: document.getElementById('llama-cmd').textContent,
    rows: [...document.querySelectorAll('#gpu-list input')].map((i) => [i.id, document.querySelector(`label[for=${i.id}]`).textContent, i.value]),
  }));
  const llama = `-dev ${names.join(',')}${split.map((f) => ` ${f}`).join('')} -ngl`;
  check(shown.llama.split('\n').filter((l) => l.startsWith('llama-server')).every((l) => l.includes(llama)),
        `${c.name}: llama.cpp's command line lacks ${llama}: ${shown.llama}`);
  const rows = names.map((n, i) => [`vram${i}`, `${n} memory, GB`, sizes[i]]);
  check(JSON.stringify(shown.rows) === JSON.stringify(rows), `${c.name}: the GPU rows ${JSON.stringify(shown.rows)}, not ${JSON.stringify(rows)}`);
}

async function main() {
  const wasm = fs.statSync(path.join(opt.site, 'ggufmap.wasm')).size;
  const profile = fs.mkdtempSync(path.join(opt.work, 'chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => bad(`page error: ${e.message}`));
  const models = opt.models;
  const options = llamaOptions();

  // ---- ready ----
  await page.goto(opt.page);
  await page.waitForFunction(() => window.__ggufmap && window.__ggufmap.ready, null, { timeout: 30000 });
  const ready = await page.evaluate(() => window.__ggufmap.ready);
  check(ready < 1000, `the page took ${ready.toFixed(0)} ms to be ready (more than a second)`);
  const version = await page.evaluate(() => document.getElementById('version').dataset.version);
  const text = cli(['plan', path.join(opt.www, 'm', 'moe.gguf')]).stdout;
  const llama = /llama\.cpp (v[0-9.]+) would print/.exec(text);
  check(llama && version.endsWith(`llama.cpp ${llama[1]}`), `the page names ${version}; the reports ${llama && llama[1]}`);

  // ---- the fixtures and the replica, over HTTP ----
  const cases = [
    { name: 'llama, 3 shards, CUDA', p: { m: `${models}/m/llama-00002-of-00003.gguf`, hw: 'gpu', vram: '1', ngl: '1' } },
    { name: 'qwen3moe on a Mac', p: { m: `${models}/m/moe.gguf`, hw: 'mac', ram: '16', c: '4096', ncmoe: '1', ctk: 'q8_0', ctv: 'q8_0', fa: 'on' } },
    { name: 'gemma4, 2 shards, CPU only', p: { m: `${models}/m/gemma-00001-of-00002.gguf`, hw: 'cpu', ram: '8', cpu: 'x86-avx2', np: '2' } },
    { name: 'qwen35 with --mtp', p: { m: `${models}/m/qwen35.gguf`, hw: 'gpu', vram: '8', mtp: '1', c: '8192' } },
    { name: 'mamba2 on a Mac', p: { m: `${models}/m/mamba2.gguf`, hw: 'mac', ram: '8' } },
    { name: 'hf:// through the hub', p: { m: 'hf://org/llama-GGUF/Llama-Q8_0-00001-of-00003.gguf', hw: 'gpu', vram: '24', hub } },
    { name: '-hf OWNER/REPO:QUANT', p: { m: 'org/llama-GGUF:Q8_0', hw: 'mac', ram: '32', hub } },
    { name: 'a 6.4 MiB header, 4 shards', p: { m: `${models}/m/B-00003-of-00004.gguf`, hw: 'gpu', vram: '16', cpu: 'x86-amx', c: '32768' } },
    // several GPUs: -dev CUDA0,CUDA1 with a limit each; the replica at -ts 3,1 overflows CUDA0, and fit's -ts suggestion fits
    { name: 'the replica on two GPUs, -ts 3,1', gpus: 2, p: { m: `${models}/m/Q-00001-of-00004.gguf`, hw: 'gpu', vram: '48,48', ts: '3,1', c: '32768' } },
    { name: 'gemma4 on three GPUs, -sm none -mg 1', gpus: 3, p: { m: `${models}/m/gemma-00001-of-00002.gguf`, hw: 'gpu', vram: '1,2,1', sm: 'none', mg: '1', np: '2' } },
    { name: 'qwen3moe on two GPUs, -ngl 2', gpus: 2, p: { m: `${models}/m/moe.gguf`, hw: 'gpu', vram: '1,1', ngl: '2', ts: '1,3', fa: 'off' } },
  ];
  const argvOf = {};
  for (const c of cases) {
    const got = await checkPage(page, c.p);
    argvOf[c.name] = got.runs.map((r) => r.argv);
    if (!got.fit) { bad(`${c.name}: no result: ${JSON.stringify(got.runs.map((r) => r.stderr))}`); continue; }
    check(got.runs.length === 3, `${c.name}: ${got.runs.length} commands ran, not fit, plan and the figure`);
    sameAsCli(c.name, got.runs, undefined);
    await shownAsJson(page, c.name, got.fit);
    await llamaFlagsExist(page, c.name, options);
    if (c.gpus) await severalGpus(page, c, got);
  }

  // ---- the replica: 4 shards, in as few requests as the command line ----
  const replica = { m: `${models}/m/Q-00001-of-00004.gguf`, hw: 'mac', ram: '128', c: '262144' };
  let start = logLines().length;
  const r1 = await checkPage(page, replica);
  const served = logLines().slice(start).filter((l) => l.path.startsWith('/m/Q-'));
  const fitRun = r1.runs[0];
  sameAsCli('the replica', r1.runs, undefined);
  if (r1.fit) await shownAsJson(page, 'the replica', r1.fit);
  start = logLines().length;
  const cliPlan = JSON.parse(cli(['plan', replica.m, '--device', 'metal', '--json']).stdout);
  const cliRequests = logLines().slice(start).length;
  check(fitRun.cost.requests === served.length && served.length <= cliRequests,
        `the replica: the page made ${fitRun.cost.requests} requests (nginx saw ${served.length}), the command line ${cliRequests}`);
  check(r1.runs.slice(1).every((r) => r.cost.requests === 0), 'the replica: plan and the figure went to the network again');
  const headerBytes = served.reduce((n, l) => n + l.bytes, 0);
  // named as a shard, the model's other shards are known before its first
  // header is: model.c asks for all four at once
  const roundTrips = fitRun.cost.roundTrips;
  check(roundTrips === 1, `the replica: ${roundTrips} round trips, not 1 (the 4 shards at once)`);
  console.log(`replica (4 shards, ${cliPlan.n_shards} in the plan): ${served.length} requests in ${roundTrips} round trips, ${headerBytes} bytes ` +
              `(the command line: ${cliRequests} requests); fit in ${fitRun.ms.toFixed(0)} ms`);
  // a second check in the same page (another -c): the page's copy answers
  start = logLines().length;
  await page.fill('#c', '131072');
  await page.click('#go');
  await page.waitForFunction(() => window.__ggufmap.done >= 2, null, { timeout: 120000 });
  const again = await page.evaluate(() => window.__ggufmap.runs.slice(3));
  check(again.length === 3 && logLines().slice(start).length === 0 && again.every((r) => r.cost.requests === 0),
        `a second check of the same model went to the network (${logLines().slice(start).length} requests)`);
  sameAsCli('the replica, checked again', again, undefined);

  // ---- a server without Range support: the model is not downloaded ----
  start = logLines().length;
  const nr = await checkPage(page, { ...replica, m: `${models}/norange/Q-00001-of-00004.gguf` });
  await page.waitForTimeout(500); // let nginx log the cancelled answers
  const sent = logLines().slice(start).filter((l) => l.path.startsWith('/norange/'));
  const sentBytes = sent.reduce((n, l) => n + l.bytes, 0);
  const modelBytes = [1, 2, 3, 4].reduce((n, k) => n + fs.statSync(path.join(opt.www, 'norange', `Q-0000${k}-of-00004.gguf`)).size, 0);
  check(sent.length > 0 && sent.every((l) => l.status === 200) && sentBytes < 64 * 1048576,
        `no Range: nginx sent ${sentBytes} bytes of the ${modelBytes}-byte model in ${sent.length} answers`);
  console.log(`no Range support: nginx sent ${sentBytes} bytes in ${sent.length} answers for a ${modelBytes}-byte model`);
  sameAsCli('no Range support', nr.runs, undefined);

  // ---- bad files: the command line's message ----
  for (const [name, file] of [['a bad file', 'bad.gguf'], ['a short file', 'short.gguf'], ['a missing file', 'none.gguf']]) {
    const got = await checkPage(page, { m: `${models}/m/${file}`, hw: 'mac', ram: '16' });
    const run = got.runs[0];
    const want = cli(run.argv);
    const shown = await page.evaluate(() => document.getElementById('failure').hidden ? null : document.getElementById('error').textContent);
    check(run.rc === want.rc && want.rc === 2 && shown === want.stderr.trim(),
          `${name}: the page says ${JSON.stringify(shown)} (exit ${run.rc}), the command line ${JSON.stringify(want.stderr.trim())} (exit ${want.rc})`);
  }

  // ---- CORS: what the page says when a server does not let it read ----
  for (const [where, words] of [['noexpose', 'Access-Control-Expose-Headers: Content-Range'], ['nocors', '(CORS)']]) {
    const got = await checkPage(page, { m: `${models}/${where}/moe.gguf`, hw: 'mac', ram: '16' });
    const shown = await page.evaluate(() => document.getElementById('error').textContent);
    check(got.runs[0].rc === 2 && shown.includes(words), `${where}: the page says ${JSON.stringify(shown)}`);
  }
  check(logLines().every((l) => l.method !== 'OPTIONS'), 'a request needed a CORS preflight (nginx saw OPTIONS)');

  // ---- files picked from disk: read in slices, the same answers ----
  const local = path.join(opt.www, 'local');
  async function pick(name, files, setup) {
    await page.goto(opt.page);
    await page.waitForFunction(() => window.__ggufmap && window.__ggufmap.ready);
    await page.setInputFiles('#file', files.map((f) => path.join(local, f)));
    await page.waitForFunction((n) => document.getElementById('status').textContent.startsWith(`${n} file`), files.length);
    await setup();
    await page.click('#go');
    await page.waitForFunction(() => window.__ggufmap.done >= 1, null, { timeout: 60000 });
    const got = await page.evaluate(() => window.__ggufmap);
    sameAsCli(name, got.runs, local);
    if (got.fit) await shownAsJson(page, name, got.fit);
    await llamaFlagsExist(page, name, options);
    const read = got.runs.reduce((n, r) => n + r.cost.fileBytes, 0);
    const size = files.reduce((n, f) => n + fs.statSync(path.join(local, f)).size, 0);
    console.log(`${name}: read ${got.runs.map((r) => r.cost.fileBytes).join(' + ')} = ${read} bytes of the files' ${size} ` +
                `(fit, plan with repack's dry run, the figure)`);
    return got;
  }
  const picked = await pick('picked files', ['llama-00001-of-00003.gguf', 'llama-00002-of-00003.gguf', 'llama-00003-of-00003.gguf'],
    async () => { await page.check('input[name=hw][value=gpu]'); await page.fill('#vram0', '1'); await page.fill('#ngl', '1'); });
  const advice = await page.evaluate(() => [...document.querySelectorAll('#advice pre')].map((p) => p.textContent));
  const planAdvice = picked.plan ? picked.plan.suggestions.map((s) => s.command).filter((c) => c.startsWith('ggufmap repack')) : [];
  check(planAdvice.length === 1 && (picked.fit.verdict.fits || advice.includes(planAdvice[0])),
        `picked files: plan's repack command ${JSON.stringify(planAdvice)} is not shown (${JSON.stringify(advice)})`);
  const big = await pick('picked files, a 6.4 MiB header', [1, 2, 3, 4].map((k) => `B-0000${k}-of-00004.gguf`),
    async () => { await page.check('input[name=hw][value=mac]'); await page.fill('#ram', '32'); });
  const bigSize = [1, 2, 3, 4].reduce((n, k) => n + fs.statSync(path.join(local, `B-0000${k}-of-00004.gguf`)).size, 0);
  check(big.runs.every((r) => r.cost.fileBytes < bigSize / 2), 'picked files: a command read half the files or more');

  // ---- keyboard only ----
  await page.goto(opt.page);
  await page.waitForFunction(() => window.__ggufmap && window.__ggufmap.ready);
  const focused = () => page.evaluate(() => document.activeElement && (document.activeElement.id || document.activeElement.name || document.activeElement.tagName));
  let steps = 0;
  while ((await focused()) !== 'model' && steps++ < 20) await page.keyboard.press('Tab');
  check(steps < 20, 'keyboard: Tab never reaches the model field');
  await page.keyboard.type(`${models}/m/moe.gguf`);
  while ((await focused()) !== 'hw' && steps++ < 40) await page.keyboard.press('Tab');
  await page.keyboard.press('ArrowDown'); // a Mac -> NVIDIA GPU
  const hw = await page.evaluate(() => document.querySelector('input[name=hw]:checked').value);
  check(hw === 'gpu', `keyboard: the arrow keys chose ${hw}, not the GPU`);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.__ggufmap.done >= 1, null, { timeout: 60000 });
  const kb = await page.evaluate(() => ({ focus: document.activeElement.id, fit: window.__ggufmap.fit, hidden: document.getElementById('result').hidden }));
  check(!kb.hidden && kb.focus === 'verdict' && kb.fit && kb.fit.device === 'cuda',
        `keyboard: result ${kb.hidden ? 'hidden' : 'shown'}, focus on ${kb.focus}, device ${kb.fit && kb.fit.device}`);

  // ---- two GPUs through the form's own controls: the same commands as the link ----
  await page.goto(opt.page);
  await page.waitForFunction(() => window.__ggufmap && window.__ggufmap.ready);
  const two = cases.find((c) => c.gpus === 2);
  await page.fill('#model', two.p.m);
  await page.check('input[name=hw][value=gpu]');
  await page.fill('#vram0', '48');
  await page.focus('#add-gpu');
  await page.keyboard.press('Enter'); // a second GPU, as large as the one before, its field focused
  await page.keyboard.press('Tab'); // its remove button
  await page.keyboard.press('Tab'); // the add button
  await page.keyboard.press('Enter'); // a third
  const third = await page.evaluate(() => ({ n: document.querySelectorAll('#gpu-list li').length, focus: document.activeElement.id,
                                           split: !document.getElementById('split').hidden }));
  check(third.n === 3 && third.focus === 'vram2' && third.split, `the form: adding GPUs gave ${JSON.stringify(third)}`);
  await page.click('#gpu-list li:nth-child(3) button.remove');
  await page.fill('#ts', two.p.ts);
  await page.fill('#c', two.p.c);
  await page.press('#c', 'Enter');
  await page.waitForFunction(() => window.__ggufmap.done >= 1, null, { timeout: 120000 });
  const form = await page.evaluate(() => ({ runs: window.__ggufmap.runs.map((r) => r.argv), search: location.search }));
  const link = new URLSearchParams(form.search);
  check(JSON.stringify(form.runs) === JSON.stringify(argvOf[two.name]) && link.get('vram') === two.p.vram && link.get('ts') === two.p.ts,
        `the form's two GPUs ran ${JSON.stringify(form.runs[0])} (link ${form.search}), the link's case ${JSON.stringify(argvOf[two.name][0])}`);

  // ---- a phone: no sideways scrolling ----
  await page.setViewportSize({ width: 390, height: 844 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(wide <= 0, `a phone's width (two GPUs, their results): the page is ${wide} px too wide`);
  // one GPU again: the split fields go, the label is plain again

  await page.click('#gpu-list li:nth-child(2) button.remove');
  const one = await page.evaluate(() => ({ split: document.getElementById('split').hidden, label: document.querySelector('label[for=vram0]').textContent,
                                          focus: document.activeElement.id }));
  check(one.split && one.label === 'GPU memory, GB' && one.focus === 'vram0', `the form: back to one GPU gave ${JSON.stringify(one)}`);


  // ---- the screenshot the README shows ----
  await page.setViewportSize({ width: 1100, height: 900 });
  // -hf of the 4-shard replica through the hub (listings, redirects to another host)
  const shot = await checkPage(page, { m: 'org/Qwen3.8-Flash-Next-GGUF', hw: 'mac', ram: '128', c: '65536', hub });
  sameAsCli('-hf of the replica', shot.runs, undefined);
  check(shot.runs.slice(1).every((r) => r.cost.requests === 0),
        `-hf of the replica: plan and the figure went to the network again (${shot.runs.map((r) => r.cost.requests).join(', ')})`);
  console.log(`-hf of the replica through the hub: ${shot.runs[0].cost.requests} fetches in ${shot.runs[0].cost.roundTrips} round trips ` +
              '(refs, tree, then the 4 shards at once, each fetch following one redirect)');
  await page.waitForFunction(() => document.getElementById('picture').complete);
  await page.screenshot({ path: path.join(opt.work, 'web.png'), fullPage: true });

  await context.close();
  console.log(`ggufmap.wasm: ${wasm} bytes; ready in ${ready.toFixed(0)} ms; wasm memory after the replica: ${shot.runs[2].memory} bytes`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

main().catch((e) => { console.log(`FAIL: ${e.stack || e}`); process.exit(1); });
