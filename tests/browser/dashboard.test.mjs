// Browser end-to-end test of the dashboard (ctest: dashboard_browser, label
// `browser`). Starts a real `smoe coordinator`, seeds a sweep through
// smoe-dashboard-fixture (a gRPC worker), drives Debian's chromium headless
// with playwright-core and checks what the user sees:
//   login -> sweeps list -> sweep page: the headline charts have one line per
//   M with one point per k, the optimal-k markers sit at the argmax of the
//   seed means, a trial completing updates the page live (SSE), CSV and PNG
//   export download real files, the trial page draws learning curves and
//   router load, and the Skill-Mix page plots each metric vs EPT with a line
//   per k_skills and the best EPT per k (dots and a table, derived here from
//   the fixture's formulas), live, next to the EPT x k_skills tables; an
//   admin retries and cancels a trial and annotates a sweep, a viewer sees
//   no actions, and requests without the CSRF token are refused. Exploration
//   (issue 18 item 3): filters with = != < > and an error for an unknown
//   field, the column picker, any x/y with trials as dots, the parallel-
//   coordinates brush filtering the table, the learning-curve overlay, the
//   compare view, archived sweeps hidden; /api/openapi.json and
//   examples/pandas_results.py. Deleting a sweep: refused (disabled button,
//   409) while trials are live, no button and 403 for a viewer, an admin's
//   confirm and the sweep gone from the list and the API.
// Screenshots go to $SMOE_ARTIFACTS. Exit 77 = skipped (and why).
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.SMOE_BIN_DIR;
const artifacts = process.env.SMOE_ARTIFACTS || path.join(os.tmpdir(), 'smoe-browser-artifacts');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
function fail(why) {
  console.error(`FAIL: ${why}`);
  process.exitCode = 1;
  throw new Error(why);
}
function check(cond, why) {
  if (!cond) fail(why);
  console.log(`ok - ${why}`);
}

if (!bin || !fs.existsSync(path.join(bin, 'smoe'))) skip(`no smoe binary in ${bin}`);
if (!fs.existsSync(chromiumPath)) skip(`${chromiumPath} not installed (scripts/install-deps --browser)`);
let chromium;
try {
  const require = createRequire(path.join(process.env.SMOE_NODE_MODULES || path.join(here, '../../web/node_modules'), 'x.js'));
  ({ chromium } = require('playwright-core'));
} catch (e) {
  skip(`playwright-core not installed (the web build's npm install did not run): ${e.message}`);
}

// Chromium's flags for this sandboxed, offline machine (see
// .library/env/machines/cpp.md).
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage'];

// Mirrors tests/browser/fixture.cc.
function ood(p, seed) {
  const best = Math.min(2 * p.M, p.num_experts ?? 8);
  const soft = p.attention === 'softmax' ? (0.02 * p.M) / 4 : 0;
  return 0.9 - 0.06 * Math.abs(Math.log2(p.top_k) - Math.log2(best)) + 0.01 * ((seed % 3) - 1) - soft;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'smoe-browser-'));
fs.mkdirSync(artifacts, { recursive: true });
let coord = null;
let browser = null;
let tail = null;

async function waitFor(fn, what, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  fail(`timed out waiting for ${what} (last: ${last})`);
}

function fixture(args) {
  const r = spawnSync(path.join(bin, 'smoe-dashboard-fixture'), args, { encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) fail(`fixture ${args[0]} failed: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

async function main() {
  // 1. Coordinator with gRPC and HTTP on free ports.
  let out = '';
  coord = spawn(path.join(bin, 'smoe'), ['coordinator', '--data-dir', path.join(work, 'data'),
    '--listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0',
    '--port-file', path.join(work, 'port')], { stdio: ['ignore', 'pipe', 'pipe'] });
  coord.stdout.on('data', (d) => { out += d; });
  coord.stderr.on('data', (d) => { out += d; });
  const url = await waitFor(() => out.match(/dashboard: (http:\/\/\S+)/)?.[1], 'the dashboard URL');
  const port = await waitFor(() => fs.existsSync(path.join(work, 'port')) && fs.readFileSync(path.join(work, 'port'), 'utf8').trim(), 'the port file');
  const grpc = `127.0.0.1:${port}`;
  const tokenFile = path.join(work, 'data', 'token');
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  check(!out.includes(token), 'the coordinator never prints the token to a pipe');

  const home = await fetch(url).then((r) => r.text());
  if (home.includes('was not built into this binary')) {
    skip('the binary embeds the how-to-build page (npm was missing at build time)');
  }

  // 2. Seed. First a one-seed sweep for the "n = 1" rules (step 10), all
  // complete (seeding leases any pending sraven trial, so it goes first).
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-one-seed.yaml')]);
  // 72 trials, the last (hyla, M=3, k=8, seed 2) left pending.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-fixture.yaml'), '--leave', '1']);
  // Skill-Mix: 12 trials (EPT x k_skills, one seed), one left pending to
  // complete live in step 9.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'skillmix-fixture.yaml'), '--leave', '1']);

  // 3. Browser: the API refuses us until we sign in.
  browser = await chromium.launch({ executablePath: chromiumPath, args: FLAGS, headless: true });
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1500, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e) + ' @ ' + page.url()));
  // A filter on an unknown field is answered 400 on purpose (step 7b).
  const expected400 = (u) => /[?&]q=bogus/.test(decodeURIComponent(u));
  let allow400 = false;
  page.on('response', (r) => r.status() >= 400 && r.status() !== 401 && !(r.status() === 400 && expected400(r.url())) &&
    errors.push(`${r.status()} ${r.url()}`));
  // 401s before signing in are expected; anything else is a failure.
  page.on('console', (m) => m.type() === 'error' && !/status of 401/.test(m.text()) &&
    !(allow400 && /status of 400/.test(m.text())) && errors.push(m.text() + ' @ ' + page.url()));
  const anon = await page.request.get(url + 'api/sweeps');
  check(anon.status() === 401, 'the API answers 401 without the token');
  await page.goto(url + '#/sweep/fixture');
  await page.waitForURL(/\/login$/);
  await page.fill('#token', 'smoe_wrong');
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
  check((await page.content()).includes('not right'), 'a wrong token is refused');
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(/#\/sweep\/fixture/), page.click('button[type=submit]')]);
  const cookies = await context.cookies();
  const c = cookies.find((x) => x.name === 'smoe_session');
  check(c && c.httpOnly && c.sameSite === 'Strict', 'login sets an HttpOnly SameSite=Strict cookie and returns to the shared URL');
  check(c && !c.value.includes(token), 'the session cookie is derived from the token, never the token itself');

  // 4. The sweep page.
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  await page.screenshot({ path: path.join(artifacts, 'sweep.png'), fullPage: true });
  // The top of the page (header and headline charts) for the README.
  await page.screenshot({ path: path.join(artifacts, 'sweep-top.png'), clip: { x: 0, y: 0, width: 1280, height: 900 } });
  // The theory overlay is off by default (a fit is a claim; the data come
  // first) and, once turned on, is captioned with its R².
  const overlays = () => page.evaluate(() => (window.__smoe.charts['headline-ood_acc-hyla']?.series || [])
    .filter((s) => s.overlay).length);
  check((await overlays()) === 0, 'the theory overlay is off by default');
  check(!/R² =/.test(await page.locator('[data-chart="headline-ood_acc-hyla"] .note').textContent()),
    'without the overlay the headline caption claims no fit');
  await page.locator('.controls label', { hasText: 'theory overlay' }).locator('input').check();
  await waitFor(async () => (await overlays()) > 0, 'the theory overlay after ticking it');
  check(/theory=1/.test(page.url()), `the overlay choice is in the shared URL (${page.url()})`);
  const note = await page.locator('[data-chart="headline-ood_acc-hyla"] .note').textContent();
  check(/R² = -?\d/.test(note), `the overlay is shown with its R² (${note})`);
  const charts = await page.evaluate(() => window.__smoe.charts);
  for (const metric of ['ood_acc', 'test_acc']) {
    for (const att of ['softmax', 'hyla']) {
      const ch = charts[`headline-${metric}-${att}`];
      check(!!ch, `headline chart ${metric} / ${att} is drawn`);
      const lines = ch.series.filter((s) => !s.overlay);
      check(lines.length === 3, `${metric}/${att}: one line per M (3), got ${lines.length}`);
      check(lines.every((s) => s.points === 4), `${metric}/${att}: 4 points per line (k = 1, 2, 4, 8)`);
      // Optimal-k markers at the argmax of the seed means.
      for (const M of [1, 2, 3]) {
        let best = null;
        let bestMean = -1;
        for (const k of [1, 2, 4, 8]) {
          const seeds = [0, 1, 2].filter((s) => !(att === 'hyla' && M === 3 && k === 8 && s === 2));
          const mean = seeds.reduce((a, s) => a + ood({ M, top_k: k, attention: att }, s), 0) / seeds.length;
          if (mean > bestMean + 1e-12) { bestMean = mean; best = k; }
        }
        const marker = ch.markers.find((m) => m.series === `k* ${M}`);
        check(marker && marker.x === best, `${metric}/${att}: optimal-k marker for M=${M} at k=${best} (got ${marker && marker.x})`);
      }
      if (metric === 'ood_acc') {
        check(ch.series.filter((s) => s.overlay).length === 3, `${att}: theory overlay drawn for 3 values of M`);
      }
    }
  }
  check(!!charts['optimal-hyla'] && !!charts['residuals-hyla'], 'optimal-k-vs-M and fit-residual charts are drawn');
  const pending = await page.locator('tr[data-trial] .badge.pending').count();
  const counts = await page.locator('#sweep-progress .counts').textContent();
  check(counts.startsWith('71/72'), `progress shows 71/72 (${counts})`);
  check(pending >= 0, 'trials table rendered');

  // 5. Live: one trial completes; the page follows without a reload.
  const before = await page.evaluate(() => window.__smoe.trialsUsed);
  check(before === 71, `71 trials counted before (${before})`);
  await page.evaluate(() => { window.__smoe.noReload = true; });
  fixture(['complete', '--coordinator', grpc, '--token-file', tokenFile, '--count', '1']);
  await waitFor(() => page.evaluate(() => window.__smoe.trialsUsed === 72 && window.__smoe.charts['headline-ood_acc-hyla']), 'the live update');
  const stillSame = await page.evaluate(() => window.__smoe.noReload === true);
  check(stillSame, 'the charts updated live without reloading the page (SSE)');
  const state = await page.locator('#sweep-state').textContent();
  check(state === 'completed', `sweep state is live: ${state}`);
  check((await page.locator('#sweep-progress .counts').textContent()).startsWith('72/72'), 'progress is live: 72/72');
  await page.screenshot({ path: path.join(artifacts, 'sweep-live.png'), fullPage: true });

  // 6. Export: CSV and PNG of the headline chart.
  const cardSel = '[data-chart="headline-ood_acc-hyla"]';
  const [csvDl] = await Promise.all([page.waitForEvent('download'), page.click(`${cardSel} button.csv`)]);
  const csv = fs.readFileSync(await csvDl.path(), 'utf8');
  const lines = csv.trim().split('\n');
  check(lines[0].startsWith('top_k,') && lines[0].includes('M=1') && lines[0].includes('k* 3'), `CSV header names the series (${lines[0].slice(0, 80)}…)`);
  check(lines.length === 1 + 8, `CSV has a row per x (k = 1..8 with the theory overlay): ${lines.length - 1}`);
  const [pngDl] = await Promise.all([page.waitForEvent('download'), page.click(`${cardSel} button.png`)]);
  const png = fs.readFileSync(await pngDl.path());
  check(png.length > 2000 && png.subarray(1, 4).toString() === 'PNG', `PNG export is an image (${png.length} bytes)`);
  fs.writeFileSync(path.join(artifacts, 'export-headline.png'), png);
  fs.writeFileSync(path.join(artifacts, 'export-headline.csv'), csv);

  // 6b. Programmatic access (issue 18 item 7): the OpenAPI description is
  // public; the pandas example loads the sweep with the token header (here
  // through its standard-library path).
  const spec = await fetch(url + 'api/openapi.json');
  const specJson = await spec.json();
  check(spec.status === 200 && specJson.openapi.startsWith('3.') && specJson.paths['/api/sweeps/{sweep}'],
    'GET /api/openapi.json without a token: an OpenAPI 3 document');
  // Debian's python3 (where pandas comes from: scripts/install-deps --browser
  // installs python3-pandas) before whatever python3 is first on PATH.
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const example = path.join(here, '../../examples/pandas_results.py');
  const py = spawnSync(python, [example, 'fixture', '--url', url,
    '--token-file', tokenFile, '--csv', '-', '--no-pandas'], { encoding: 'utf8', timeout: 60000 });
  if (py.error) {
    console.log(`ok - (python3 not found: examples/pandas_results.py not run: ${py.error.message})`);
  } else {
    const pyLines = (py.stdout || '').trim().split(/\r?\n/);
    check(py.status === 0 && pyLines.length === 73 && pyLines[0].startsWith('trial_id,state,seed,attention,M,top_k') &&
      pyLines[0].includes('ood_acc'), `examples/pandas_results.py loads the 72 trials (${py.status}: ${pyLines[0]}; ${py.stderr.slice(0, 200)})`);
    // The pandas path: a DataFrame, the per-first-axis mean/s.e.m./count of
    // the first metric, and the same rows as CSV.
    const hasPandas = spawnSync(python, ['-c', 'import pandas'], { encoding: 'utf8', timeout: 60000 }).status === 0;
    if (!hasPandas) {
      console.log('ok - (pandas not installed: the pandas path of examples/pandas_results.py not run; scripts/install-deps --browser installs it)');
    } else {
      const pdCsv = path.join(artifacts, 'pandas-results.csv');
      const pd = spawnSync(python, [example, 'fixture', '--url', url, '--token-file', tokenFile, '--csv', pdCsv],
        { encoding: 'utf8', timeout: 120000 });
      const table = (pd.stdout || '').trim().split('\n');
      const csvLines = pd.status === 0 ? fs.readFileSync(pdCsv, 'utf8').trim().split('\n') : [];
      const ids = (lines) => lines.slice(1).map((l) => l.split(',')[0]).sort().join(' ');
      check(pd.status === 0 && /mean\s+sem\s+count/.test(table[0]) && table[1].trim() === 'attention' &&
        table.slice(2).every((l) => /^(softmax|hyla)\s+[-0-9.e]+\s+[-0-9.e]+\s+\d+$/.test(l.trim())) && table.length === 4,
        `examples/pandas_results.py with pandas prints mean/sem/count per attention (${pd.status}: ${table.join(' | ')}; ${(pd.stderr || '').slice(0, 300)})`);
      check(csvLines.length === 73 && csvLines[0] === pyLines[0] && ids(csvLines) === ids(pyLines),
        `pandas CSV has the same columns and the same 72 trials as the standard-library path (${csvLines.length} lines)`);
    }
  }

  // 7. Table: sort by OOD accuracy, descending, and filter.
  await page.click('th.sortable:text-is("ood_acc")');
  await page.click('th.sortable:text-is("ood_acc")');
  await waitFor(async () => (await page.locator('#table th.desc').count()) === 1, 'descending sort');
  const headers = await page.locator('#table thead th').allTextContents();
  const col = headers.findIndex((h) => h.trim() === 'ood_acc');
  const firstOod = Number(await page.locator('#table tbody tr:first-child td').nth(col).textContent());
  check(firstOod > 0.85, `sorted table starts with the best trial (${firstOod})`);
  check(page.url().includes('sort=-r.ood_acc'), 'the sort is in the shareable URL');

  // 7b. Exploration (issue 18 item 3). Filters: = != < > on any column; an
  // unknown field is refused with a message naming it.
  const matched = () => page.evaluate(() => window.__smoe.tableMatched);
  allow400 = true;
  await page.fill('#trial-filter', 'bogus>1');
  await page.press('#trial-filter', 'Enter');
  const filterErr = await waitFor(async () => (await page.locator('#filter-error').count()) > 0 &&
    page.locator('#filter-error').textContent(), 'the unknown-field error');
  check(filterErr.includes("unknown filter field 'bogus'") && filterErr.includes('known fields: trial, state'),
    `an unknown filter field is an error naming it and the known fields (${filterErr.slice(0, 120)}…)`);
  allow400 = false;
  await page.fill('#trial-filter', 'M=1 top_k>2 ood_acc>0');
  await page.press('#trial-filter', 'Enter');
  await waitFor(async () => (await matched()) === 12 && (await page.locator('#filter-error').count()) === 0,
    'M=1 top_k>2: 12 trials');
  check(true, 'M=1 top_k>2 ood_acc>0 keeps k in {4, 8} x 2 attentions x 3 seeds (12)');
  await page.fill('#trial-filter', 'attention!=hyla state=succeeded');
  await page.press('#trial-filter', 'Enter');
  await waitFor(async () => (await matched()) === 36, 'attention!=hyla: 36 trials');
  check(page.url().includes('q=attention'), 'the filter is in the shareable URL');
  await page.fill('#trial-filter', '');
  await page.press('#trial-filter', 'Enter');
  await waitFor(async () => (await matched()) === 72, 'the cleared filter');
  // The column picker hides a column (and remembers it in the URL).
  await page.click('#column-picker summary');
  await page.locator('#column-picker input[data-col="worker"]').uncheck();
  await waitFor(async () => (await page.locator('#table th[data-col="worker"]').count()) === 0, 'the hidden worker column');
  check(page.url().includes('hide=worker') && (await page.locator('#table th[data-col="r.ood_acc"]').count()) === 1,
    'the column picker hides the worker column and keeps the others');
  // Any parameter on x, any metric on y, a line per any parameter, trials as dots.
  await page.selectOption('#control-metric', 'test_acc');
  await page.selectOption('#control-x', 'M');
  await page.selectOption('#control-series', 'top_k');
  await waitFor(() => page.evaluate(() => window.__smoe.charts['headline-test_acc-hyla']?.title.includes('vs M') &&
    window.__smoe.charts['headline-test_acc-hyla'].series[0]?.label.startsWith('top_k=') &&
    !window.__smoe.charts['headline-ood_acc-hyla']), 'test_acc vs M, a line per top_k');
  let xy = await page.evaluate(() => window.__smoe.charts['headline-test_acc-hyla']);
  const xyLines = xy.series.filter((s) => !s.overlay);
  check(xyLines.length === 4 && xyLines.every((s) => s.points === 3),
    `y = test_acc, x = M, a line per top_k: 4 lines of 3 points (${xyLines.map((s) => `${s.label}:${s.points}`)})`);
  await page.locator('#control-points').check();
  await waitFor(() => page.evaluate(() => window.__smoe.charts['headline-test_acc-hyla']?.scatter === 36), 'trials as dots');
  check(/metric=test_acc/.test(page.url()) && /x=M/.test(page.url()) && /points=1/.test(page.url()),
    `the x/y choice is in the URL (${page.url()})`);
  await page.screenshot({ path: path.join(artifacts, 'explore-xy.png'), fullPage: true });
  // Parallel coordinates over the swept parameters and the metrics; a brush
  // on top_k filters the trials table.
  const pc = await waitFor(() => page.evaluate(() => window.__smoe.charts.parcoords), 'the parallel-coordinates plot');
  check(pc.lines === 72 && pc.axes.join(',') === 'attention,M,top_k,ood_acc,test_acc',
    `parallel coordinates: 72 lines over ${pc.axes}`);
  await page.locator('[data-chart="parcoords"]').scrollIntoViewIfNeeded();
  const tickY = async (label) => {
    const b = await page.locator('.pc-axis[data-axis="top_k"] .tick', { hasText: label }).first().boundingBox();
    return b.y + b.height / 2;
  };
  const overlayBox = await page.locator('.pc-axis[data-axis="top_k"] .overlay').boundingBox();
  const bx = overlayBox.x + overlayBox.width / 2;
  const y8 = await tickY('8');
  const y4 = await tickY('4');
  await page.mouse.move(bx, y8 - 10);
  await page.mouse.down();
  await page.mouse.move(bx, (y8 + y4) / 2, { steps: 4 });
  await page.mouse.move(bx, y4 + 10, { steps: 4 });
  await page.mouse.up();
  await waitFor(async () => (await matched()) === 36, 'the brushed table (top_k in {4, 8})');
  const brushed = await page.evaluate(() => window.__smoe.charts.parcoords);
  check(brushed.selected === 36 && brushed.terms === 'top_k=4|8',
    `the brush selects top_k 4 and 8: 36 lines highlighted (${brushed.selected}, ${brushed.terms})`);
  check((await page.locator('#pc-filter').textContent()).includes('top_k=4|8') && page.url().includes('pc='),
    'the trials table shows only the brushed trials and says so; the brush is in the URL');
  const ks = await page.locator('#table table.trials').evaluate((t) => {
    const col = [...t.querySelectorAll('thead th')].findIndex((th) => th.dataset.col === 'p.top_k');
    return [...t.querySelectorAll('tbody tr')].map((tr) => tr.children[col].textContent);
  });
  check(ks.length === 36 && ks.every((k) => k === '4' || k === '8'), `the table lists the 36 brushed trials, all k 4 or 8 (${[...new Set(ks)]})`);
  await page.screenshot({ path: path.join(artifacts, 'explore-parcoords.png'), fullPage: true });
  // Overlay the learning curves of two ticked trials.
  const picks = page.locator('#table tbody input.pick-trial');
  await picks.nth(0).check();
  await picks.nth(1).check();
  const ov = await waitFor(() => page.evaluate(() => window.__smoe.charts.overlay?.series.length === 2 &&
    window.__smoe.charts.overlay), 'the learning-curve overlay');
  check(ov.series.every((s) => s.points === 50) && /sel=/.test(page.url()),
    `two selected trials' curves overlaid (${ov.title}; ${ov.series.map((s) => s.points)} points)`);
  await page.screenshot({ path: path.join(artifacts, 'explore-overlay.png'), fullPage: true });
  // The shared URL restores the view: brush, selection, x/y.
  await page.goto(page.url());
  await page.reload();
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const restored = await page.evaluate(() => ({ m: window.__smoe.tableMatched, pc: window.__smoe.charts.parcoords,
    ov: window.__smoe.charts.overlay, xy: window.__smoe.charts['headline-test_acc-hyla'] }));
  check(restored.m === 36 && restored.pc.selected === 36 && restored.ov?.series.length === 2 && !!restored.xy,
    'reloading the shared URL restores the brush, the table filter, the overlay and the x/y choice');
  // Compare two sweeps side by side on the same axes.
  await page.goto(url + '#/compare/fixture/fixture-one-seed?metric=ood_acc&x=top_k&series=M');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const cmp = await page.evaluate(() => window.__smoe.charts);
  check(cmp['compare-0'] && cmp['compare-1'] &&
    JSON.stringify(cmp['compare-0'].yRange) === JSON.stringify(cmp['compare-1'].yRange) &&
    cmp['compare-0'].xs.join(',') === '1,2,4,8' && cmp['compare-1'].xs.join(',') === '1,2,4,8',
  `compare: both panels share x (${cmp['compare-0']?.xs}) and y range (${cmp['compare-0']?.yRange})`);
  check(cmp['compare-0'].series.length === 3 && cmp['compare-1'].series.length === 2,
    'compare: a line per M in each sweep (3 and 2)');
  await page.screenshot({ path: path.join(artifacts, 'compare.png'), fullPage: true });
  // Back to the sorted table for step 8.
  await page.goto(url + '#/sweep/fixture?sort=-r.ood_acc');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });

  // 8. A trial page: learning curves and router load.
  const trialHref = await page.locator('#table tbody tr:first-child a').getAttribute('href');
  await page.goto(url + trialHref);
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const tcharts = await page.evaluate(() => window.__smoe.charts);
  check(tcharts['trial-loss']?.series[0]?.points === 50, 'learning curve has the 50 loss points');
  check(tcharts['trial-router-0']?.series.length === 8, 'router load: one line per expert (8)');
  // System metrics (sys/*): CPU and RSS drawn; GPU absent (not zero) on a CPU trial.
  check(tcharts['trial-sys-cpu']?.series.length === 1 && tcharts['trial-sys-cpu'].series[0].points === 10,
    `system metrics: one CPU line with 10 samples (${JSON.stringify(tcharts['trial-sys-cpu']?.series)})`);
  check(tcharts['trial-sys-mem']?.series[0]?.label === 'sys/rss_mb', 'system metrics: an RSS line');
  const sysNote = await page.locator('[data-chart="trial-sys-cpu"] .note').textContent();
  check(/GPU utilisation and memory: not measured/.test(sysNote), `GPU metrics are shown as absent (${sysNote})`);
  check(!(tcharts['trial-other']?.series || []).some((s) => s.label.startsWith('sys/')), 'sys/* metrics are not in "Other metrics"');
  await page.screenshot({ path: path.join(artifacts, 'trial.png'), fullPage: true });

  // 9. Skill-Mix: metric vs EPT plots (a line per k_skills, best EPT as big
  // dots), the best-EPT table and the EPT x k_skills tables; 11 of 12 trials
  // done, the 12th completes live.
  await page.goto(url + '#/sweep/fixture-skillmix');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const pointsOf = (ch) => ch.series.reduce((a, s) => a + s.points, 0);
  let sm = await page.evaluate(() => window.__smoe.charts);
  check(sm['skillmix-plot-ratio_full_marks'] && pointsOf(sm['skillmix-plot-ratio_full_marks']) === 11,
    'Skill-Mix plot drawn with the 11 finished trials');
  check(sm['skillmix-ratio_full_marks']?.cells === 11, 'Skill-Mix table has the 11 finished cells');
  await page.screenshot({ path: path.join(artifacts, 'skillmix-partial.png'), fullPage: true });
  await page.evaluate(() => { window.__smoe.noReload = true; });
  fixture(['complete', '--coordinator', grpc, '--token-file', tokenFile, '--count', '1', '--kind', 'skillmix']);
  await waitFor(() => page.evaluate(() => window.__smoe.charts['skillmix-ratio_full_marks']?.cells === 12 &&
    window.__smoe.charts['skillmix-plot-ratio_full_marks']?.series.reduce((a, s) => a + s.points, 0) === 12),
  'the live Skill-Mix update');
  check(await page.evaluate(() => window.__smoe.noReload === true), 'Skill-Mix plots and tables updated live (SSE), no reload');
  sm = await page.evaluate(() => window.__smoe.charts);
  const full = sm['skillmix-ratio_full_marks'];
  check(full && full.rows === 4 && full.cols === 3 && full.cells === 12, 'Ratio of Full Marks: EPT (4) x k_skills (3) table');
  check(!!sm['skillmix-skill_fraction'], 'Skill Fraction table');
  const cell = await page.locator('[data-chart="skillmix-ratio_full_marks"] tbody tr:nth-child(2) td:nth-child(2)').textContent();
  check(cell === '0.10 ± 0.050', `cell EPT=2, k=2 reads 0.10 ± 0.050 (${cell})`);

  // Mirrors tests/browser/fixture.cc: one trial per (EPT, k), so a cell's mean
  // is the formula's value. Expected best EPT = argmax over EPT, ties -> the
  // smaller EPT; the runner-up is the best of the rest.
  const EPTS = [1, 2, 4, 8];
  const KS = [2, 3, 4];
  const smFormula = {
    ratio_full_marks: (ept, k) => Math.min(1, (0.1 * ept) / k),
    ratio_all_skills: (ept, k) => 0.6 - 0.1 * Math.abs(Math.log2((2 * ept) / (k * k))),
    skill_fraction: (ept, k) => Math.min(1, (0.2 * ept) / k + 0.3),
  };
  const ranked = (f, k) => EPTS.map((e) => ({ ept: e, mean: f(e, k) }))
    .sort((a, b) => (Math.abs(a.mean - b.mean) > 1e-12 ? b.mean - a.mean : a.ept - b.ept));
  const allSkillsBest = KS.map((k) => ranked(smFormula.ratio_all_skills, k)[0].ept);
  check(allSkillsBest.some((e) => e !== EPTS[EPTS.length - 1]) && new Set(allSkillsBest).size > 1,
    `the fixture has interior, k-dependent best EPTs for ratio_all_skills (${allSkillsBest})`);
  const bestTable = page.locator('[data-chart="skillmix-best"]');
  check(await bestTable.count() === 1, 'best-EPT-per-k_skills table is drawn');
  for (const [metric, f] of Object.entries(smFormula)) {
    const ch = sm[`skillmix-plot-${metric}`];
    check(!!ch, `Skill-Mix plot ${metric} is drawn`);
    check(ch.series.length === KS.length && KS.every((k, i) => ch.series[i].label === `k_skills=${k}`),
      `${metric}: one line per k_skills (${ch.series.map((s) => s.label)})`);
    check(ch.series.every((s) => s.points === EPTS.length), `${metric}: ${EPTS.length} points (EPT) per line`);
    for (const k of KS) {
      const [best, runner] = ranked(f, k);
      const m = ch.markers.filter((x) => x.series === `best EPT k_skills=${k}`);
      check(m.length === 1 && m[0].x === best.ept && Math.abs(m[0].y - best.mean) < 1e-9,
        `${metric}: best-EPT dot for k=${k} at EPT=${best.ept} (${best.mean.toFixed(3)}; got ${m.map((x) => `${x.x}:${x.y}`)})`);
      const row = bestTable.locator(`tr[data-metric="${metric}"][data-k="${k}"]`);
      const tds = await row.locator('td').allTextContents();
      check(tds[2] === String(best.ept) && tds[3].startsWith(best.mean.toFixed(4)) &&
        tds[4] === String(runner.ept) && tds[5].startsWith(runner.mean.toFixed(4)),
      `${metric}, k=${k}: table says best EPT ${best.ept}, runner-up ${runner.ept} (${tds.join(' | ')})`);
    }
  }
  // The dashboard's best/runner-up EPT (web/src/data.js) agree with the
  // coordinator's own (analysis BestRowPerColumn, the tables' "best").
  const api = await (await page.request.get(url + 'api/sweeps/fixture-skillmix/skillmix')).json();
  for (const t of api.tables) {
    for (const b of t.best) {
      const row = bestTable.locator(`tr[data-metric="${t.metric}"][data-k="${b.col}"] td`);
      const tds = await row.allTextContents();
      check(tds[2] === String(b.best) && tds[4] === String(b.runner_up ?? '–'),
        `${t.metric}, k=${b.col}: dashboard and coordinator agree on best ${b.best} / runner-up ${b.runner_up}`);
    }
  }
  // ratio_all_skills, k=2: EPT 1 and 4 tie for second place -> EPT 1.
  const tie = smFormula.ratio_all_skills;
  check(tie(1, 2) === tie(4, 2) && ranked(tie, 2)[1].ept === 1, 'a runner-up tie goes to the smaller EPT');
  const rfmRow = await bestTable.locator('tr[data-metric="ratio_all_skills"][data-k="3"] td').allTextContents();
  check(rfmRow[3].endsWith('± 0.0300') && /^\d+\.\d$/.test(rfmRow[6]),
    `best-EPT row shows mean ± s.e. and the gap in s.e. units (${rfmRow.join(' | ')})`);

  const plotSel = '[data-chart="skillmix-plot-ratio_all_skills"]';
  const [smCsvDl] = await Promise.all([page.waitForEvent('download'), page.click(`${plotSel} button.csv`)]);
  const smCsv = fs.readFileSync(await smCsvDl.path(), 'utf8').trim().split('\n');
  check(smCsv[0].startsWith('ept,') && smCsv[0].includes('k_skills=3') && smCsv[0].includes('best EPT k_skills=4') &&
    smCsv.length === 1 + EPTS.length, `Skill-Mix plot CSV: a row per EPT, a column per series (${smCsv[0].slice(0, 80)}…)`);
  const [smPngDl] = await Promise.all([page.waitForEvent('download'), page.click(`${plotSel} button.png`)]);
  const smPng = fs.readFileSync(await smPngDl.path());
  check(smPng.length > 2000 && smPng.subarray(1, 4).toString() === 'PNG', `Skill-Mix plot PNG export is an image (${smPng.length} bytes)`);
  fs.writeFileSync(path.join(artifacts, 'export-skillmix-ratio_all_skills.png'), smPng);
  await page.screenshot({ path: path.join(artifacts, 'skillmix.png'), fullPage: true });

  // 10. One seed: no band, no CI, no P(best); the page says n = 1.
  await page.goto(url + '#/sweep/fixture-one-seed');
  const optSel = '[data-chart="optimal-table"]';
  await waitFor(async () => (await page.locator(optSel).count()) > 0 &&
    (await page.locator(optSel).textContent()).includes('n = 1'), 'the one-seed optimal-k table');
  const oneSeedRows = await page.locator(`${optSel} tbody tr`).evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  check(oneSeedRows.length === 2 && oneSeedRows.every((r) => r[4] === '–' && r[5] === 'n = 1' && r[6] === 'n = 1'),
    `one seed: no s.e.m., and P(best) and CI read "n = 1" (${JSON.stringify(oneSeedRows)})`);
  const oneNote = await page.locator('[data-chart="headline-ood_acc-hyla"] .note').textContent();
  check(oneNote.includes('n = 1') && !oneNote.includes('bootstrap CI'),
    `one seed: the headline caption says n = 1 and claims no CI (${oneNote})`);
  await page.screenshot({ path: path.join(artifacts, 'one-seed.png'), fullPage: true });

  // 11. Failures and stuck work are visible: a sweep whose only trial failed
  // is not a green "completed"; the trial page lists the attempt with its
  // exit code and message; a sweep no worker can run says why.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-fail.yaml'), '--leave', '1']);
  fixture(['fail', '--coordinator', grpc, '--token-file', tokenFile, '--count', '1']);
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-unschedulable.yaml'), '--leave', '1']);
  await page.goto(url + '#/sweep/fixture-fail');
  await waitFor(async () => (await page.locator('#sweep-state').count()) > 0, 'the failed sweep page');
  const failState = page.locator('#sweep-state');
  await waitFor(async () => (await failState.textContent()).includes('1 failed'), 'the failed count in the state badge');
  check((await failState.getAttribute('class')).includes('completed-failed'),
    `a completed sweep with a failed trial is not green (${await failState.getAttribute('class')})`);
  // The trials table's exit and error columns.
  const errCell = await waitFor(async () => (await page.locator('table.trials td.error').count()) > 0 &&
    page.locator('table.trials td.error').first().textContent(), 'the trials table error cell');
  const exitCell = await page.locator('table.trials td.exit').first().textContent();
  check(exitCell === '70' && errCell.includes('no CUDA-capable device'),
    `the trials table shows the failed attempt's exit code and error (${exitCell} | ${errCell})`);
  const failedHref = await waitFor(() => page.locator('a[href^="#/trial/fixture-fail/"]').first().getAttribute('href'), 'the failed trial link');
  await page.goto(url + failedHref);
  await waitFor(async () => (await page.locator('#attempts').count()) > 0, 'the attempts table');
  const attempt = await page.locator('#attempts tbody tr').first().evaluate((tr) =>
    [...tr.querySelectorAll('td')].map((td) => td.textContent));
  check(attempt[2] === 'failed' && attempt[3] === '70' && attempt[4].includes('no CUDA-capable device'),
    `the trial page shows the attempt's outcome, exit code and message (${JSON.stringify(attempt)})`);
  // The failed attempt's log (stderr and non-event stdout), stored by the
  // coordinator: shown in the log panel with its attempt button.
  const logText = await waitFor(async () => {
    const t = await page.locator('#trial-log').textContent();
    return t.includes('RuntimeError') && t;
  }, 'the failed attempt\'s log');
  check(logText.includes('Traceback (most recent call last)') && logText.includes('not an event: warming up'),
    `the log panel shows the attempt's log (${logText})`);
  const logStatus = await page.locator('#trial-log-status').textContent();
  check(/Attempt 1 · ended/.test(logStatus), `the log panel says which attempt and that it ended (${logStatus})`);
  check(await page.locator('#trial-log-attempts button[data-attempt="1"]').count() === 1, 'one attempt button');
  await page.locator('#logs').screenshot({ path: path.join(artifacts, 'trial-log.png') });
  await page.screenshot({ path: path.join(artifacts, 'trial-failed.png'), fullPage: true });
  await page.goto(url + '#/sweep/fixture-unschedulable');
  const banner = await waitFor(async () => (await page.locator('#sweep-unschedulable').count()) > 0 &&
    page.locator('#sweep-unschedulable').textContent(), 'the unschedulable banner');
  check(/Unschedulable: (no connected worker of kind sraven has the labels pool=h200|no worker is connected)/.test(banner),
    `a sweep no worker can run says why (${banner})`);

  // 11b. A running trial's live log tail (issue 18 item 1): a worker holds
  // the trial running and its log grows a line per heartbeat; reading the
  // trial page asks the coordinator for the tail (TYPE_SEND_LOG), which the
  // next heartbeats carry; the panel polls while the attempt runs.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-live.yaml'), '--leave', '1']);
  tail = spawn(path.join(bin, 'smoe-dashboard-fixture'), ['tail', '--coordinator', grpc,
    '--token-file', tokenFile, '--seconds', '15'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tailOut = '';
  let tailErr = '';
  tail.stdout.on('data', (d) => { tailOut += d; });
  tail.stderr.on('data', (d) => { tailErr += d; });
  const tailExit = new Promise((resolve) => tail.on('exit', (code) => resolve(code)));
  const liveTrial = await waitFor(() => tailOut.includes('\n') && tailOut.split('\n')[0], 'the live trial\'s id');
  check(liveTrial.startsWith('fixture-live/'), `the tail fixture leased the live sweep's trial (${liveTrial})`);
  await page.goto(url + '#/trial/' + liveTrial);
  const lineCount = (t) => (t.match(/live line \d+/g) || []).length;
  const firstTail = await waitFor(async () => {
    const t = await page.locator('#trial-log').textContent();
    return lineCount(t) > 0 && t;
  }, 'the running attempt\'s live log lines');
  const liveStatus = await page.locator('#trial-log-status').textContent();
  check(/Attempt 1 · running · live tail as of /.test(liveStatus) && firstTail.includes('attempt started'),
    `the log panel shows the running attempt's tail from its start (${liveStatus})`);
  const grown = await waitFor(async () => {
    const t = await page.locator('#trial-log').textContent();
    return lineCount(t) > lineCount(firstTail) + 2 && t;
  }, 'the live tail to grow without a reload');
  check(lineCount(grown) > lineCount(firstTail),
    `the live tail grows while the trial runs (${lineCount(firstTail)} → ${lineCount(grown)} lines)`);
  await page.locator('#logs').screenshot({ path: path.join(artifacts, 'trial-log-live.png') });
  const tailCode = await tailExit;
  tail = null;
  check(tailCode === 0, `the live trial completed after its run (${tailCode}: ${tailErr.slice(0, 300)})`);

  // 12a. An ASHA sweep run stepwise (one evaluation per report, as a
  // trainer reports; before the refine sweep, whose added points the
  // stepwise fixture would otherwise lease too): trials pruned at a rung are grey circles on the
  // accuracy-vs-k chart at the value they stopped at, and a pruned trial's
  // accuracy chart draws the rungs and its decisions there.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-asha.yaml'), '--stepwise', '1']);
  await page.goto(url + '#/sweep/fixture-asha');
  const grey = await waitFor(() => page.evaluate(() => {
    const c = Object.entries(window.__smoe.charts).find(([id, s]) => id.startsWith('headline-ood_acc') && (s.overlay || []).length > 0);
    return c && c[1].overlay;
  }), 'the grey circles of the pruned trials');
  // k = 1 is the worst (|log2 1 - log2 4| = 2): pruned for good at rung 0
  // (step 100) at ood_acc x 100/500 = (0.9 - 0.12 - 0.01 - 0.01) x 0.2.
  const k1 = grey.find((p) => p.x === 1);
  check(k1 && k1.label === 'pruned at step 100' && Math.abs(k1.y - 0.152) < 1e-9,
    `the trial pruned at rung 0 (k = 1) is a grey circle at the value it stopped at (${JSON.stringify(grey)})`);
  const asha = await (await page.request.get(url + 'api/sweeps/fixture-asha/search')).json();
  const prunedIds = asha.pruned_points.map((p) => p.trial_id);
  check(asha.pruned.length >= 2 && asha.pruned.length === asha.pruned_points.length &&
    JSON.stringify(asha.rungs) === '[100,200,400]',
    `the ASHA sweep ended with pruned trials and rungs 100, 200, 400 (${JSON.stringify(asha.pruned)}, ${JSON.stringify(asha.rungs)})`);
  const searchText = await page.locator('#search-usage').textContent();
  check(searchText.includes(`${asha.pruned.length} pruned`), `the search panel counts the pruned trials (${searchText})`);
  const prog = await page.locator('.progress .counts').first().textContent();
  const prunedBar = await page.locator('.progress .bar .pruned').first().evaluate((e) => e.style.width);
  check(prog.includes(`pruned ${asha.pruned.length}`) && parseFloat(prunedBar) === (100 * asha.pruned.length) / 4,
    `the progress bar counts the pruned trials as finished, in grey (${prog}; ${prunedBar})`);
  // Every grey circle lies inside the chart's x range, also at a k where no
  // trial finished (the range follows the overlay, not only the curves).
  const xr = await page.evaluate(() => Object.entries(window.__smoe.charts)
    .find(([id, s]) => id.startsWith('headline-ood_acc') && (s.overlay || []).length > 0)[1].xRange);
  check(grey.every((p) => p.x >= xr[0] && p.x <= xr[1]),
    `the accuracy-vs-k chart's x range ${JSON.stringify(xr)} holds every pruned point (k ${grey.map((p) => p.x).join(', ')})`);
  // The trials table's error column paints no alert box in rows without an
  // error (pruned and succeeded trials here).
  const errCells = await page.locator('table.trials td.error').evaluateAll((tds) =>
    tds.map((td) => [td.textContent, getComputedStyle(td).backgroundColor]));
  check(errCells.length > 0 && errCells.every(([t, bg]) => t === '' && bg === 'rgba(0, 0, 0, 0)'),
    `empty error cells are not painted (${JSON.stringify(errCells)})`);
  await page.screenshot({ path: path.join(artifacts, 'asha.png'), fullPage: true });
  const k1Id = asha.pruned_points.find((p) => p.params.top_k === 1).trial_id;
  await page.goto(url + '#/trial/' + k1Id);
  const accChart = await waitFor(() => page.evaluate(() => window.__smoe.charts['trial-acc']), 'the pruned trial\'s accuracy chart');
  check(JSON.stringify(accChart.vlines) === '[100,200,400]' &&
    accChart.overlay.some((p) => p.x === 100 && p.label === 'prune (final)'),
    `the pruned trial's accuracy chart draws the rungs and its final prune at step 100 (${JSON.stringify(accChart.vlines)}, ${JSON.stringify(accChart.overlay)})`);
  check(prunedIds.includes(k1Id), 'the pruned trial is listed as pruned');
  await page.screenshot({ path: path.join(artifacts, 'asha-trial.png'), fullPage: true });
  // 12. Adaptive sweeps: a refine sweep's page lists the search's decisions
  // (the added neighbours of the best k) and its trial-steps use.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-refine.yaml')]);
  await page.goto(url + '#/sweep/fixture-refine');
  const decisions = await waitFor(async () => (await page.locator('#search-decisions tbody tr').count()) >= 4 &&
    page.locator('#search-decisions').textContent(), 'the search decisions table');
  check(decisions.includes('add') && decisions.includes('neighbour 3 untried') && decisions.includes('neighbour 5 untried'),
    `the refine sweep lists the added neighbours of k* = 4 (${decisions.slice(0, 300)})`);
  // Decisions name their trial by its parameters, not only its hash.
  check(/top_k=3( seed [0-9]+)? \([0-9a-f]{8}\)/.test(decisions),
    `the decisions name the trial by its parameters (${decisions.slice(0, 300)})`);
  const usage = await page.locator('#search-usage').textContent();
  check(usage.includes('trial-steps used / full-grid estimate'), `the search panel states the trial-steps used (${usage})`);
  // The refine frontier: k tried 1, 3, 4, 5 (3 and 5 added, pending), x* = 4
  // in bold, the group waiting for them; and the device-hours used.
  const frontier = await waitFor(async () => (await page.locator('#search-frontier tbody tr').count()) === 1 &&
    page.locator('#search-frontier tbody tr').first().evaluate((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
  'the refine frontier table');
  const best = await page.locator('#search-frontier tbody tr b').first().textContent();
  check(frontier[1] === '1, 3, 4, 5' && frontier[2] === '4' && best === '4' && frontier[5] === 'waiting',
    `the refine frontier lists the k tried, x* = 4 in bold and the state (${JSON.stringify(frontier)})`);
  const hours = await page.locator('#search-hours').textContent();
  check(/^[0-9.e-]+ slot-hours used \/ [0-9.e-]+ full-grid estimate$/.test(hours),
    `the search panel states the device-hours used and the full-grid estimate (${hours})`);
  await page.screenshot({ path: path.join(artifacts, 'refine.png'), fullPage: true });
  // 12b. A refine sweep whose GPU-hour budget is spent at once: the group is
  // settled by the budget (x* not resolved), and the frontier says so.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-refine-budget.yaml')]);
  await page.goto(url + '#/sweep/fixture-refine-budget');
  const budgetRow = await waitFor(async () => (await page.locator('#search-frontier tbody tr.budget').count()) === 1 &&
    page.locator('#search-frontier tbody tr.budget').first().evaluate((tr) =>
      [...tr.querySelectorAll('td')].map((td) => td.textContent).concat([tr.title])),
  'the frontier row settled by the budget');
  check(budgetRow.includes('budget (GPU-hours)') && /budget_gpu_hours/.test(budgetRow[budgetRow.length - 1]),
    `the frontier marks the group settled by the GPU-hour budget, the reason as its tooltip (${JSON.stringify(budgetRow)})`);
  const budgetNote = await page.locator('#search-frontier-budget').textContent();
  check(budgetNote === '1 of 1 groups settled by the GPU-hour budget (x* not resolved)',
    `the frontier counts the groups the budget settled (${budgetNote})`);
  await page.screenshot({ path: path.join(artifacts, 'refine-budget.png'), fullPage: true });
  // 13. Admin actions (docs/roles.md): the signed-in admin retries and
  // cancels a trial and annotates a sweep from the dashboard; a request
  // without the session's CSRF token is refused; a viewer sees no actions.
  await page.goto(url + failedHref);
  await waitFor(async () => (await page.locator('#trial-retry').count()) > 0, 'the retry button of a failed trial');
  await page.click('#trial-retry');
  await waitFor(async () => (await page.locator('h2 .badge').textContent()) === 'pending', 'the retried trial shown pending');
  await waitFor(async () => (await page.locator('#trial-cancel').count()) > 0, 'the cancel button of a pending trial');
  await page.click('#trial-cancel');
  await waitFor(async () => (await page.locator('h2 .badge').textContent()) === 'cancelled', 'the cancelled trial shown cancelled');
  check(true, 'an admin retries and cancels a trial from its page');
  await page.goto(url + '#/sweep/fixture-fail');
  await waitFor(async () => (await page.locator('#sweep-notes-input').count()) > 0, 'the notes editor');
  await page.fill('#sweep-notes-input', 'k=4 best at M=1; rerun M=3 with more seeds');
  await page.fill('#sweep-tags-input', 'paper, ablation');
  await page.click('#sweep-save-notes');
  await waitFor(async () => (await page.locator('#sweep-tags .tag').allTextContents()).join(',') === 'paper,ablation',
    'the saved tags on the sweep page');
  await page.screenshot({ path: path.join(artifacts, 'admin-actions.png'), fullPage: true });
  const noCsrf = await page.request.post(url + 'api/sweeps/fixture-fail/archive', { data: { archived: true } });
  check(noCsrf.status() === 403 && (await noCsrf.text()).includes('X-CSRF-Token'),
    `a state-changing request without the CSRF token is refused (${noCsrf.status()})`);
  // The refused POST's body is never read by the server's router: the next
  // requests on the same kept-alive connection must not see it as a request
  // (they were answered with empty-body 400s; docs/reliability.md).
  for (let i = 0; i < 3; i++) {
    const next = await page.request.get(url + 'api/session');
    check(next.status() === 200, `a request after the refused POST is answered (${next.status()})`);
  }
  const made = spawnSync(path.join(bin, 'smoe'), ['token', 'create', '--role', 'viewer', '--name', 'browser-viewer',
    '--data-dir', path.join(work, 'data')], { encoding: 'utf8', timeout: 30000 });
  const viewerToken = (made.stdout || '').trim();
  check(made.status === 0 && /^smoe_[0-9a-f]{64}$/.test(viewerToken), 'smoe token create prints a viewer token');
  const vctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const vpage = await vctx.newPage();
  await vpage.goto(url + 'login');
  await vpage.fill('#token', viewerToken);
  await Promise.all([vpage.waitForURL(/#\/$|\/$/), vpage.click('button[type=submit]')]);
  await vpage.goto(url + '#/sweep/fixture-fail');
  await waitFor(async () => (await vpage.locator('#sweep-notes').count()) > 0, 'the notes for a viewer');
  check((await vpage.locator('#sweep-actions button').count()) === 0 &&
    (await vpage.locator('#sweep-notes').textContent()).includes('rerun M=3'),
    'a viewer sees the notes and tags but no action buttons');
  const denied = await vpage.request.post(url + 'api/sweeps/fixture-fail/cancel');
  check(denied.status() === 403 && (await denied.text()).includes("needs role 'admin'"),
    `a viewer's action is refused naming the role needed (${denied.status()})`);
  await vctx.close();
  // Archived sweeps are hidden from the sweeps list unless asked for.
  await page.goto(url + '#/sweep/fixture-fail');
  await waitFor(async () => (await page.locator('#sweep-archive').count()) > 0, 'the archive button');
  await page.click('#sweep-archive');
  await waitFor(async () => (await page.locator('#sweep-tags .badge.archived').count()) > 0, 'the archived badge');
  await page.goto(url + '#/');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const shown = await page.evaluate(() => window.__smoe.sweepsShown);
  check(!shown.includes('fixture-fail') && shown.includes('fixture') &&
    (await page.locator('#archived-hidden').textContent()).includes('1 archived'),
  `the sweeps list hides the archived sweep and says so (${shown})`);
  await page.locator('#show-archived').check();
  await waitFor(() => page.evaluate(() => window.__smoe.ready && window.__smoe.sweepsShown.includes('fixture-fail')),
    'the archived sweep after ticking "show archived"');
  check(page.url().includes('archived=1'), 'showing archived sweeps is in the URL');
  await page.screenshot({ path: path.join(artifacts, 'sweeps-archived.png'), fullPage: true });

  // Artifacts (issue 18 item 2): a trial's stored checkpoint is listed on its
  // page with a download link behind the same token check as the API.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-artifacts.yaml'), '--leave', '1']);
  fixture(['checkpoint', '--coordinator', grpc, '--token-file', tokenFile, '--count', '1']);
  await page.goto(url + '#/sweep/fixture-artifacts');
  const artTrial = await waitFor(() => page.locator('a[href^="#/trial/fixture-artifacts/"]').first().getAttribute('href'),
    'the artifacts trial link');
  await page.goto(url + artTrial);
  await waitFor(async () => (await page.locator('#artifacts a[download]').count()) > 0, 'the artifact download link');
  const artLink = page.locator('#artifacts a[download]').first();
  const artName = await artLink.textContent();
  const artHref = await artLink.getAttribute('href');
  check(artName === 'checkpoint-40-checkpoint.json', `the stored checkpoint is listed (${artName})`);
  const artBody = await page.evaluate(async (u) => (await fetch(u, { credentials: 'same-origin' })).text(), artHref);
  check(JSON.parse(artBody).step === 40, `the download link returns the checkpoint's bytes (${artBody})`);
  const anonStatus = await page.evaluate(async (u) => (await fetch(u, { credentials: 'omit' })).status, artHref);
  check(anonStatus === 401, `the download needs the token (${anonStatus})`);
  await page.screenshot({ path: path.join(artifacts, 'trial-artifacts.png'), fullPage: true });

  // Deleting a sweep (admin; docs/dashboard.md). A sweep with live trials
  // (fixture-artifacts: one left pending/running) cannot be deleted: the
  // button is disabled with the reason, and the API answers 409.
  await page.goto(url + '#/sweep/fixture-artifacts');
  await waitFor(async () => (await page.locator('#sweep-delete').count()) > 0, 'the delete button of a live sweep');
  check(await page.locator('#sweep-delete').isDisabled(), 'the delete button is disabled while trials are live');
  const reason = await page.locator('#sweep-delete-reason').textContent();
  check(/pending or running: cancel the sweep first/.test(reason), `the page says why (${reason})`);
  // (Node's fetch with the admin's bearer token: the 409 is expected.)
  const bearer = (t) => ({ headers: { Authorization: `Bearer ${t}` } });
  const liveDelete = await fetch(url + 'api/sweeps/fixture-artifacts', { method: 'DELETE', ...bearer(token) });
  const liveText = await liveDelete.text();
  check(liveDelete.status === 409 && liveText.includes("sweep 'fixture-artifacts' has 1 live trial") &&
    liveText.includes('smoe sweep cancel fixture-artifacts'),
  `deleting a sweep with live trials is refused naming the count (${liveDelete.status} ${liveText})`);
  await page.screenshot({ path: path.join(artifacts, 'sweep-delete-refused.png'), fullPage: true });
  // A viewer gets no delete button, and the API refuses it.
  const dctx = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const dpage = await dctx.newPage();
  await dpage.goto(url + 'login');
  await dpage.fill('#token', viewerToken);
  await Promise.all([dpage.waitForURL(/#\/$|\/$/), dpage.click('button[type=submit]')]);
  await dpage.goto(url + '#/sweep/fixture-one-seed');
  await waitFor(async () => (await dpage.locator('#sweep-tags').count()) > 0, 'the viewer\'s sweep head');
  check((await dpage.locator('#sweep-delete').count()) === 0, 'a viewer sees no delete button');
  const viewerDelete = await fetch(url + 'api/sweeps/fixture-one-seed', { method: 'DELETE', ...bearer(viewerToken) });
  check(viewerDelete.status === 403 && (await viewerDelete.text()).includes("needs role 'admin'"),
    `a viewer's delete is refused naming the role needed (${viewerDelete.status})`);
  await dctx.close();
  // The admin deletes a finished sweep: a confirm naming its trial count,
  // then the sweeps list without it; the API no longer knows it.
  await page.goto(url + '#/sweep/fixture-one-seed');
  await waitFor(async () => (await page.locator('#sweep-delete').count()) > 0, 'the delete button');
  check(!(await page.locator('#sweep-delete').isDisabled()), 'the delete button of a finished sweep is enabled');
  let confirmText = '';
  page.once('dialog', (d) => { confirmText = d.message(); d.accept(); });
  await page.screenshot({ path: path.join(artifacts, 'sweep-delete.png'), fullPage: true });
  await page.click('#sweep-delete');
  await page.waitForURL(/#\/$/);
  check(confirmText.startsWith('Delete sweep fixture-one-seed and its 6 trials'),
    `the confirm names the sweep and its trial count (${confirmText})`);
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  const after = await page.evaluate(() => window.__smoe.sweepsShown);
  check(!after.includes('fixture-one-seed') && after.includes('fixture'),
    `the deleted sweep is gone from the sweeps list (${after})`);
  const gone = await fetch(url + 'api/sweeps/fixture-one-seed', bearer(token));
  check(gone.status === 404, `the API answers 404 for the deleted sweep (${gone.status})`);
  await page.screenshot({ path: path.join(artifacts, 'sweep-deleted.png'), fullPage: true });

  // 14. Workers (issue 31 item 7): the header links the workers page; it
  // lists the workers the API lists (the fixture's, mostly lost by now), with
  // the summary line; the admin drains one from it.
  await page.goto(url + '#/');
  await page.click('#nav-workers');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready && window.__smoe.workers, null, { timeout: 20000 });
  const listed = await (await fetch(url + 'api/workers', bearer(token))).json();
  const shownWorkers = await page.evaluate(() => window.__smoe.workers);
  const ids = (ws) => ws.map((w) => w.id ?? w.worker_id).sort().join(',');
  check(listed.workers.length > 0 && ids(shownWorkers) === ids(listed.workers),
    `the workers page lists the API's workers (${ids(shownWorkers)})`);
  const summary = await page.locator('#workers-summary').textContent();
  check(summary.startsWith(`${listed.workers.length} worker`) && summary.includes('slots in use'),
    `the workers page says how many and in which state (${summary})`);
  const target = listed.workers.find((w) => !w.draining && w.state !== 'stopped');
  page.once('dialog', (d) => d.accept());
  await page.click(`button.drain[data-worker="${target.worker_id}"]`);
  await waitFor(async () => (await page.locator('#workers-action').textContent()).endsWith('done'), 'the drain to be done');
  const drained = (await (await fetch(url + 'api/workers', bearer(token))).json())
    .workers.find((w) => w.worker_id === target.worker_id);
  check(drained && drained.draining === true, `the admin drained worker ${target.worker_id} from the page`);
  await waitFor(async () => (await page.locator(`button.drain[data-worker="${target.worker_id}"]`).count()) === 0,
    'the drained worker without a drain button');
  await page.screenshot({ path: path.join(artifacts, 'workers.png'), fullPage: true });

  // 15. The tuned view (issue 33): a sweep over lr offers "tune lr per
  // top_k"; the page then shows the optimal top_k with lr chosen per top_k on
  // val_acc (the fixture's best lr is 0.01 at top_k 1, 0.001 at 2).
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-tuned.yaml')]);
  await page.goto(url + '#/sweep/fixture-tuned');
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 20000 });
  await waitFor(async () => (await page.locator('#control-tune option[value="lr"]').count()) > 0, 'the tune control offering lr');
  await page.selectOption('#control-tune', 'lr');
  await waitFor(async () => (await page.locator('[data-chart="tuned-table"], #tuned-error').count()) > 0,
    'the tuned optimal table');
  if (await page.locator('#tuned-error').count()) fail(`the tuned view failed: ${await page.locator('#tuned-error').textContent()}`);
  const tunedText = await page.locator('[data-chart="tuned-table"]').textContent();
  check(tunedText.includes('1: lr=0.01 (2 seeds)') && tunedText.includes('2: lr=0.001 (2 seeds)'),
    `the tuned view chose lr per top_k on val_acc (${tunedText})`);
  const tunedBest = await page.evaluate(() => window.__smoe.tuned);
  check(tunedBest.length === 2 && tunedBest.every((t) => t.best === 2), `the tuned optimum is top_k 2 at M = 1 and 2 (${JSON.stringify(tunedBest)})`);
  check(page.url().includes('tune=lr'), 'the tuned view is in the URL');
  // Its charts: per facet the tuned curves beside each fixed lr's (dashed),
  // and the lr chosen per top_k on a log scale (0.001 and 0.01 span a decade).
  const tunedCharts = await page.evaluate(() => Object.entries(window.__smoe.charts)
    .filter(([id]) => id.startsWith('tuned-')).map(([id, c]) => ({ id, yScale: c.yScale, series: c.series })));
  const tc = tunedCharts.find((c) => c.id.startsWith('tuned-curves-'));
  const ch = tunedCharts.find((c) => c.id.startsWith('tuned-choice-'));
  check(tc && tc.series.filter((s) => !s.overlay).length === 2 && tc.series.filter((s) => s.overlay).length === 4,
    `the tuned curves chart: a tuned line per M and a dashed line per (M, fixed lr) (${JSON.stringify(tc)})`);
  check(ch && ch.yScale === 'log10' && ch.series.length === 2 &&
    ch.series.every((s) => JSON.stringify(s.values) === JSON.stringify([0.01, 0.001])),
  `the chosen-lr chart: lr 0.01 at top_k 1 and 0.001 at 2 for both M, log y (${JSON.stringify(ch)})`);
  await page.screenshot({ path: path.join(artifacts, 'tuned-view.png'), fullPage: true });

  // 16. Sampled axes (issue 33 item 1): a sweep with lr drawn log-uniformly
  // lists lr as an ordinary axis (its 4 drawn values); with lr on x the
  // headline chart has a base-10 log x scale, with top_k on x the usual log2.
  fixture(['seed', '--coordinator', grpc, '--token-file', tokenFile,
    '--sweep', path.join(here, 'sraven-sampled.yaml')]);
  await page.goto(url + '#/sweep/fixture-sampled?x=lr&series=top_k');
  const sampledChart = await waitFor(() => page.evaluate(() => window.__smoe.charts['headline-ood_acc-hyla']?.title.includes('vs lr') &&
    window.__smoe.charts['headline-ood_acc-hyla']), 'the headline chart with lr on x');
  check(sampledChart.xScale === 'log10', `a log-uniform sampled axis on x is a log10 scale (${sampledChart.xScale})`);
  await page.goto(url + '#/sweep/fixture-sampled?x=top_k&series=lr');
  const gridChart = await waitFor(() => page.evaluate(() => window.__smoe.charts['headline-ood_acc-hyla']?.title.includes('vs top_k') &&
    window.__smoe.charts['headline-ood_acc-hyla']), 'the headline chart with top_k on x');
  check(gridChart.xScale === 'log2', `a grid axis on x keeps the log2 scale (${gridChart.xScale})`);
  check(gridChart.series.filter((x) => x.label.startsWith('lr=')).length === 4,
    `a line per drawn lr (${JSON.stringify(gridChart.series.map((x) => x.label))})`);
  await page.screenshot({ path: path.join(artifacts, 'sampled-axis.png'), fullPage: true });

  check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
}

try {
  await main();
  console.log(`browser tests passed; screenshots in ${artifacts}`);
} catch (e) {
  if (!process.exitCode) process.exitCode = 1;
  console.error(e);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (tail) tail.kill('SIGTERM');
  if (coord) coord.kill('SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
}
