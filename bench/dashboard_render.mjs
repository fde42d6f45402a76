// First render of the dashboard's sweep page in headless Chromium.
//   node bench/dashboard_render.mjs URL TOKEN_FILE SWEEP [RUNS]
// Time = the page's performance.now() when the headline charts are drawn
// (window.__smoe.firstRenderMs: navigation start -> sweep fetched, analysis
// fetched, every chart drawn). Run 1 is a cold browser profile; later runs
// reuse it (cached JS/CSS). Uses playwright-core from the web build
// ($SMOE_NODE_MODULES) and /usr/bin/chromium.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [url, tokenFile, sweep, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 6);
const modules = process.env.SMOE_NODE_MODULES || path.resolve('build/web/app/node_modules');
const { chromium } = createRequire(path.join(modules, 'x.js'))('playwright-core');
const token = fs.readFileSync(tokenFile, 'utf8').trim();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage'],
});
const context = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
const u = new URL(url);
await context.addCookies([{ name: 'smoe_token', value: token, domain: u.hostname, path: '/', httpOnly: true, sameSite: 'Strict' }]);
const times = [];
for (let i = 0; i < runs; i++) {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${url}#/sweep/${sweep}`);
  await page.waitForFunction(() => window.__smoe && window.__smoe.ready, null, { timeout: 60000 });
  const wall = Date.now() - t0;
  const r = await page.evaluate(() => ({ ms: window.__smoe.firstRenderMs, charts: Object.keys(window.__smoe.charts).length, used: window.__smoe.trialsUsed }));
  times.push(r.ms);
  console.log(`render ${i + 1}: ${r.ms.toFixed(0)} ms in page (${wall} ms wall from goto), ${r.charts} charts, ${r.used} trials aggregated`);
  await page.close();
}
const warm = times.slice(1).sort((a, b) => a - b);
console.log(`first render: cold ${times[0].toFixed(0)} ms; warm median ${warm[Math.floor(warm.length / 2)]?.toFixed(0)} ms, max ${warm[warm.length - 1]?.toFixed(0)} ms`);
await browser.close();
