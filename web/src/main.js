// SMoE Lab dashboard: hash-routed pages over the coordinator's JSON API.
//   #/                         sweeps with progress
//   #/sweep/<id>?x=&series=&facet=&metric=&tune=&points=&band=&theory=&q=&state=
//              &sort=&page=&pc=&pcm=&sel=&cm=&hide=
//   #/trial/<sweep>/<hex>      learning curves + router telemetry
//   #/compare/<a>/<b>?metric=&x=&series=   two sweeps side by side
//   #/workers?all=1            workers: state, slots, heartbeat, trials
//   (docs/dashboard.md lists every parameter)
import './style.css';
import { ApiError, api, toLogin, watchSweep } from './api.js';
import { prunedOverlay, renderSearch, rungLines, trialDecisionPoints } from './search.js';
import { sweepActions, sweepLabels, trialActions } from './actions.js';
import { artifactsSection } from './artifacts.js';
import { logsSection } from './logs.js';
import { renderWorkers } from './workers.js';
import { PALETTE, card, download, heatTable, lineChart } from './chart.js';
import {
  alignSeries, brushTerms, defaultView, errorText, exitText, fitMeaningful, fitQuality, fmt, maxSeeds, meanSe,
  metricName, numericXs, optimalUncertainty, plottableMetrics, pointSeries, seriesFromCurves, sharedRange,
  skillMixSeries, tableQuery, theoryAccuracy, toCsv, trialMetricGroups, xAxisScale, xScaleFlags,
} from './data.js';

const app = document.getElementById('app');
const crumbs = document.getElementById('crumbs');
const live = document.getElementById('live');
let cleanup = [];

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return el;
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), q: new URLSearchParams(query || '') };
}

function setQuery(q) {
  const { parts } = parseHash();
  const path = '#/' + parts.map(encodeURIComponent).join('/');
  const s = q.toString();
  history.replaceState(null, '', path + (s ? '?' + s : ''));
}

function setLive(on, why) {
  live.textContent = on ? '● live' : why === 'deleted' ? '○ sweep deleted' : '○ reconnecting';
  live.className = 'live ' + (on ? 'on' : 'off');
}

function progress(counts) {
  const total = counts.total || 0;
  const done = counts.succeeded + counts.failed + counts.cancelled + (counts.pruned || 0);
  const pct = total ? (100 * done) / total : 0;
  const bar = h('div', { class: 'bar', title: `${done}/${total} finished` },
    h('span', { class: 'ok', style: `width:${total ? (100 * counts.succeeded) / total : 0}%` }),
    h('span', { class: 'bad', style: `width:${total ? (100 * (counts.failed + counts.cancelled)) / total : 0}%` }),
    // Trials an adaptive search stopped early are finished too (grey).
    h('span', { class: 'pruned', style: `width:${total ? (100 * (counts.pruned || 0)) / total : 0}%` }),
    h('span', { class: 'run', style: `width:${total ? (100 * counts.running) / total : 0}%` }));
  return h('div', { class: 'progress' }, bar,
    h('span', { class: 'counts' },
      `${done}/${total} (${pct.toFixed(0)}%) · running ${counts.running} · pending ${counts.pending} · failed ${counts.failed}` +
      (counts.pruned ? ` · pruned ${counts.pruned}` : '')));
}

function fmtTime(ms) {
  return ms ? new Date(ms).toLocaleString() : '';
}

// ---- sweeps list ---------------------------------------------------------------

async function renderSweeps(q) {
  crumbs.textContent = '';
  const showArchived = q.get('archived') === '1';
  const picked = new Set();
  const compareBtn = h('button', { type: 'button', id: 'compare-sweeps', disabled: '' }, 'Compare the two ticked sweeps');
  compareBtn.addEventListener('click', () => {
    const [a, b] = [...picked];
    location.hash = `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
  });
  const toggle = h('label', { class: 'muted' }, h('input', {
    type: 'checkbox', id: 'show-archived', checked: showArchived ? '' : null,
    onchange: (e) => { location.hash = e.target.checked ? '#/?archived=1' : '#/'; },
  }), ' show archived sweeps');
  app.replaceChildren(h('h2', {}, 'Sweeps'), h('div', { class: 'table-tools' }, toggle, compareBtn),
    h('div', { id: 'sweeps' }, h('p', { class: 'muted' }, 'Loading…')));
  const draw = async () => {
    const { sweeps: all } = await api('sweeps');
    const box = document.getElementById('sweeps');
    if (!box) return;
    const sweeps = showArchived ? all : all.filter((s) => !s.archived);
    const hidden = all.length - sweeps.length;
    window.__smoe.sweepsShown = sweeps.map((s) => s.sweep_id);
    if (!sweeps.length) {
      box.replaceChildren(h('p', { class: 'muted' }, all.length ? `All ${all.length} sweeps are archived (tick "show archived sweeps").`
        : 'No sweeps yet. Submit one: smoe sweep submit examples/sraven-demo.yaml'));
      return;
    }
    const pick = (id) => h('input', {
      type: 'checkbox', class: 'pick-sweep', 'data-sweep': id, checked: picked.has(id) ? '' : null,
      title: 'tick two sweeps to compare them',
      onchange: (e) => {
        if (e.target.checked) picked.add(id); else picked.delete(id);
        compareBtn.disabled = picked.size !== 2;
      },
    });
    box.replaceChildren(h('table', { class: 'grid sweeps' },
      h('thead', {}, h('tr', {}, ['', 'sweep', 'kind', 'state', 'progress', 'axes', 'updated'].map((c) => h('th', {}, c)))),
      h('tbody', {}, sweeps.map((s) => h('tr', { 'data-sweep': s.sweep_id },
        h('td', {}, pick(s.sweep_id)),
        h('td', {}, h('a', { href: '#/sweep/' + encodeURIComponent(s.sweep_id) }, s.sweep_id), ' ', sweepLabels(s)),
        h('td', {}, s.kind),
        h('td', {}, sweepBadge(s)),
        h('td', {}, progress(s.counts)),
        h('td', { class: 'muted' }, s.axes.map((a) => `${a.name} ∈ {${a.values.join(', ')}}`).join(' × ') + ` × ${s.seeds.length} seed(s)`),
        h('td', { class: 'muted' }, fmtTime(s.updated_ms)))))),
    hidden ? h('p', { class: 'muted', id: 'archived-hidden' }, `${hidden} archived sweep(s) hidden.`) : '');
  };
  await draw();
  window.__smoe.ready = true;
  const timer = setInterval(() => draw().catch(() => {}), 5000);
  cleanup.push(() => clearInterval(timer));
}

// ---- sweep page ------------------------------------------------------------------

function headlineCharts(box, curves, optimal, fits, st, rows = []) {
  const metric = curves.metric;
  if (!curves.facets.length) {
    box.appendChild(h('p', { class: 'muted empty' }, `No succeeded trials with ${metric} yet.`));
    return;
  }
  for (const facet of curves.facets) {
    const fit = fits.find((f) => f.facet_label === facet.label && f.ok);
    const theory = st.theory && st.theoryAxes && fit ? fit.k_star : [];
    let xs = numericXs([facet], theory.flatMap((k) => k.curve.map((c) => c[0])));
    const categorical = xs.some((x) => typeof x !== 'number');
    const tick = categorical ? xs.map(String) : null;
    const xsPlot = categorical ? xs.map((_, i) => i) : xs;
    const series = seriesFromCurves(facet, xs, st.band, optimal, PALETTE);
    for (const s of series) if (!s.markers && curves.series) s.label = `${curves.series}=${s.label}`;
    if (st.points) {
      series.push(...pointSeries(rows, {
        x: curves.x, series: curves.series, facet: curves.facet, facetLabel: facet.label, metric,
        xs, groups: facet.series.map((x) => String(x.label)), palette: PALETTE,
      }));
    }
    theory.forEach((k) => {
      const idx = facet.series.findIndex((s) => Number(s.key) === k.N);
      const color = PALETTE[(idx < 0 ? 7 : idx) % PALETTE.length];
      series.push({ label: `theory ${curves.series}=${k.N}`, color, dash: [6, 4], width: 1.5,
        values: theoryAccuracy(k, xs) });
    });
    const title = `${metricName(metric)} vs ${curves.x}` + (curves.facet ? ` — ${curves.facet}=${facet.label}` : '');
    const positive = !categorical && xs.every((x) => x > 0);
    // Adaptive sweeps: trials stopped early, grey, at the value they stopped at.
    const overlay = prunedOverlay(st.search, {
      metric, xKey: curves.x, facetKey: curves.facet, facetLabel: facet.label,
      xIndex: categorical ? new Map(xs.map((x, i) => [String(x), i])) : null,
    });
    const chart = lineChart(box, `headline-${metric}-${facet.label}`, title, {
      xs: xsPlot, xTickLabels: tick, series, ...xScaleFlags(xAxisScale(st.axes, curves.x, positive ? xs : [], st.log)),
      xLabel: curves.x, yLabel: metricName(metric), overlay,
    }, (overlay.length ? `grey circles: ${overlay.length} trials stopped early, at the value they stopped at; ` : '') +
    (maxSeeds(curves) < 2 ? 'n = 1 (one seed per point): no band, no CI'
      : `band: ${st.band === 'sem' ? 'mean ± s.e.m.' : `${Math.round(curves.ci_level * 100)}% bootstrap CI`} over seeds`) +
      `; big dots: optimal ${curves.x}` + (st.points ? '; small dots: individual trials' : '') +
      (theory.length ? `; dashed: fitted E(k,N) as 1 − E, clipped to [0, 1] (${fitQuality(fit)})` : ''));
    st.charts.push(chart.u);
  }
}

function optimalCharts(box, analysis, st) {
  const byFacet = new Map();
  for (const o of analysis.optimal) {
    if (!byFacet.has(o.facet_label)) byFacet.set(o.facet_label, []);
    byFacet.get(o.facet_label).push(o);
  }
  for (const [facet, rows] of byFacet) {
    const numeric = rows.every((o) => typeof o.series === 'number');
    const xs = numeric ? rows.map((o) => o.series) : rows.map((_, i) => i);
    const series = [
      { label: `best ${analysis.x} (argmax)`, color: PALETTE[0], values: rows.map((o) => o.best),
        lo: rows.map((o) => o.ci_lo), hi: rows.map((o) => o.ci_hi) },
      { label: 'smallest within 1 s.e.', color: PALETTE[2], dash: [4, 3], values: rows.map((o) => o.one_se) },
    ];
    // No "theory k*" line: the fitted E(k, N) is smallest at k = T whatever
    // the fit (f.k_star_note), so the line would only repeat T.
    const oneSeed = rows.every((o) => typeof o.seeds === 'number' && o.seeds < 2);
    const chart = lineChart(box, `optimal-${facet}`, `Optimal ${analysis.x} vs ${analysis.series}` + (analysis.facet ? ` — ${analysis.facet}=${facet}` : ''), {
      xs, xTickLabels: numeric ? null : rows.map((o) => o.series_label), series,
      xLabel: analysis.series, yLabel: analysis.x, height: 240,
    }, `${metricName(analysis.metric)}; ` + (oneSeed ? 'n = 1 (one seed): no CI of the argmax'
      : `band: ${Math.round(analysis.curves.ci_level * 100)}% bootstrap CI of the argmax over seeds`));
    st.charts.push(chart.u);
  }
}

function fitSection(box, analysis, st) {
  for (const f of analysis.fits) {
    if (!f.ok) {
      box.appendChild(h('p', { class: 'muted' }, `Theory fit (${analysis.facet}=${f.facet_label}): ${f.message}`));
      continue;
    }
    const ns = [...new Set(f.points.map((p) => p.N))].sort((a, b) => a - b);
    const xs = [...new Set(f.points.map((p) => p.k))].sort((a, b) => a - b);
    const series = ns.map((n, i) => ({
      label: `${analysis.series}=${n}`, color: PALETTE[i % PALETTE.length],
      values: xs.map((k) => f.points.find((p) => p.k === k && p.N === n)?.residual ?? null),
    }));
    const c = lineChart(box, `residuals-${f.facet_label}`,
      `E(k,N) fit residuals (measured − fitted error) — ${analysis.facet}=${f.facet_label}`,
      { xs, series, xLog2: xs.every((x) => x > 0), xLabel: analysis.x, yLabel: 'residual', height: 200 },
      `a = ${f.a.toPrecision(4)}, b = ${f.b.toPrecision(4)}, ${fitQuality(f)}. ` +
      (f.k_star_note ? `Note: ${f.k_star_note}.` : ''));
    st.charts.push(c.u);
  }
}

function optimalTable(box, analysis, { id = 'optimal-table', title = null, extra = null } = {}) {
  const c = card(box, title || `Optimal ${analysis.x} per ${analysis.series} (${metricName(analysis.metric)})`, { id });
  const header = [analysis.facet || '-', analysis.series, `best ${analysis.x}`, 'mean', 's.e.m.', 'P(best)', 'CI', '1-s.e. rule'];
  if (extra) header.push(extra.header);
  const rows = analysis.optimal.map((o, i) => {
    const u = optimalUncertainty(o);
    const r = [o.facet_label, o.series_label, o.best, o.best_mean, u.sem, u.p, u.ci, o.one_se];
    if (extra) r.push(extra.cell(i));
    return r;
  });
  c.body.appendChild(h('table', { class: 'grid compact' },
    h('thead', {}, h('tr', {}, header.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((x) => h('td', {}, fmt(x, 4))))))));
  c.tool('CSV', () => download('optimal-k.csv', new Blob([toCsv(header, rows)], { type: 'text/csv' })), 'csv');
}

// Skill-Mix: per metric, the metric vs EPT with a line per k_skills (mean ±
// s.e. band) and the best EPT per k_skills as big dots (paper §3.2: the best
// EPT grows with k). Returns the best-EPT rows of every table.
function skillMixCharts(box, sm, st) {
  const out = [];
  for (const t of sm.tables) {
    const { xs, xTickLabels, categorical, series, best } = skillMixSeries(t, PALETTE, sm.cols);
    for (const s of series) s.bandGaps = true; // no band where the s.e. is unknown
    const positive = !categorical && xs.every((x) => x > 0);
    const chart = lineChart(box, `skillmix-plot-${t.metric}`, `${metricName(t.metric)} vs ${sm.rows}`, {
      xs, xTickLabels, series, xLog2: positive, xLabel: sm.rows, yLabel: metricName(t.metric),
    }, `a line per ${sm.cols}; band: mean ± s.e. (over seeds; one trial: its own s.e., none where it reported none); ` +
      `big dots: best ${sm.rows} per ${sm.cols} = argmax of the mean (ties → smaller ${sm.rows})`);
    st.charts.push(chart.u);
    out.push(...best.map((b) => ({ metric: t.metric, ...b })));
  }
  return out;
}

function skillMixBestTable(box, sm, best) {
  const c = card(box, `Best ${sm.rows} per ${sm.cols} (argmax of the mean)`, {
    id: 'skillmix-best',
    note: `runner-up: the next-best ${sm.rows}; gap/s.e. = (best − runner-up) / √(s.e.² + s.e.²) — ` +
      'below about 2 the two are not told apart by these trials; "?" = s.e. unknown',
  });
  const header = ['metric', sm.cols, `best ${sm.rows}`, 'mean ± s.e.', `runner-up ${sm.rows}`, 'mean ± s.e.', 'gap/s.e.'];
  const cells = (b) => [metricName(b.metric), b.col, b.best ? b.best.row : '–', meanSe(b.best, 4) || '–',
    b.runner_up ? b.runner_up.row : '–', meanSe(b.runner_up, 4) || '–', b.gap_se === null ? '–' : b.gap_se.toFixed(1)];
  c.body.appendChild(h('table', { class: 'grid compact' },
    h('thead', {}, h('tr', {}, header.map((x) => h('th', {}, x)))),
    h('tbody', {}, best.map((b) => h('tr', {
      'data-metric': b.metric, 'data-k': b.col, 'data-best': b.best ? b.best.row : null,
      class: b.gap_se !== null && b.gap_se < 2 ? 'within-noise' : null,
    }, cells(b).map((x) => h('td', {}, String(x))))))));
  window.__smoe.charts['skillmix-best'] = {
    id: 'skillmix-best',
    rows: best.map((b) => ({ metric: b.metric, k: b.col, best: b.best?.row ?? null, runner_up: b.runner_up?.row ?? null })),
  };
  c.tool('CSV', () => download('skillmix-best-ept.csv', new Blob([toCsv(
    ['metric', sm.cols, `best_${sm.rows}`, 'mean', 'se', 'n', `runner_up_${sm.rows}`, 'runner_up_mean', 'runner_up_se', 'runner_up_n', 'gap_se'],
    best.map((b) => [b.metric, b.col, b.best?.row, b.best?.mean, b.best?.sem, b.best?.n,
      b.runner_up?.row, b.runner_up?.mean, b.runner_up?.sem, b.runner_up?.n, b.gap_se]))], { type: 'text/csv' })), 'csv');
}

// The trials table: server-side filter (`= != < <= > >=` on any column,
// coordinator/views/trial_table.h), sort and paging; a column picker; a tick per
// row selects the trial for the learning-curve overlay. `error` is the
// server's answer to a bad filter, shown under the filter box.
function trialTable(box, page, st, onChange, { error, onSelect } = {}) {
  const cols = page.columns;
  const resultCols = cols.results.filter((r) => !r.endsWith('_per_feature'));
  const all = [
    ['trial', 'trial'], ['state', 'state'], ['attempt', 'attempt'], ['worker', 'worker'],
    ['duration', 'duration (s)'], ['seed', 'seed'],
    ...cols.params.map((p) => ['p.' + p, p]), ...resultCols.map((r) => ['r.' + r, r]),
    ['exit', 'exit'], ['error', 'error'],
  ];
  const hidden = new Set(st.hide);
  const shown = (k) => k === 'trial' || !hidden.has(k);
  const head = all.filter(([k]) => shown(k));
  const c = card(box, `Trials (${page.matched} of ${page.total})`, { id: 'trials' });
  const q = h('input', {
    type: 'search', id: 'trial-filter', value: st.q || '', class: 'filter',
    placeholder: 'filter: M=2 ood_acc>0.8 state!=failed hyla…',
    title: 'FIELD OP VALUE with OP one of = != < <= > >= (top_k=2|4 for alternatives) on any column, ' +
      'or plain text; terms are ANDed',
  });
  const state = h('select', { class: 'filter' }, ['', 'succeeded', 'running', 'pending', 'failed', 'cancelled', 'pruned']
    .map((s) => h('option', { value: s, selected: s === (st.state || '') ? '' : null }, s || 'any state')));
  let t;
  q.addEventListener('input', () => { clearTimeout(t); t = setTimeout(() => onChange({ q: q.value, page: 0 }), 300); });
  q.addEventListener('keydown', (e) => { if (e.key === 'Enter') { clearTimeout(t); onChange({ q: q.value, page: 0 }); } });
  state.addEventListener('change', () => onChange({ state: state.value, page: 0 }));
  const start = page.offset + 1;
  const end = page.offset + page.rows.length;
  const pager = h('span', { class: 'pager' },
    h('button', { type: 'button', disabled: page.offset === 0 ? '' : null, onclick: () => onChange({ page: st.page - 1 }) }, '‹'),
    ` ${page.rows.length ? start : 0}–${end} of ${page.matched} `,
    h('button', { type: 'button', disabled: end >= page.matched ? '' : null, onclick: () => onChange({ page: st.page + 1 }) }, '›'));
  const picker = h('details', { class: 'colpick', id: 'column-picker' }, h('summary', {}, 'Columns'),
    h('div', { class: 'colpick-list' }, all.filter(([k]) => k !== 'trial').map(([k, label]) => h('label', {},
      h('input', {
        type: 'checkbox', 'data-col': k, checked: shown(k) ? '' : null,
        onchange: (e) => {
          const next = new Set(st.hide);
          if (e.target.checked) next.delete(k); else next.add(k);
          onChange({ hide: [...next] }, { keepPicker: true });
        },
      }), ' ' + label))));
  if (st.pickerOpen) picker.open = true;
  picker.addEventListener('toggle', () => { st.pickerOpen = picker.open; });
  c.body.appendChild(h('div', { class: 'table-tools' }, q, state, picker, pager));
  const brushes = brushTerms(st.pc);
  if (brushes) {
    c.body.appendChild(h('div', { class: 'chip', id: 'pc-filter' }, 'selected in the parallel coordinates: ', h('code', {}, brushes), ' ',
      h('button', { type: 'button', class: 'link', onclick: () => onChange({ pc: {}, page: 0 }) }, 'clear')));
  }
  if (error) c.body.appendChild(h('div', { class: 'error', id: 'filter-error', role: 'alert' }, error));
  const sortKey = (st.sort || '').replace(/^-/, '');
  const desc = (st.sort || '').startsWith('-');
  const selected = new Set(st.sel);
  const cell = (r, k) => {
    if (k === 'trial') return h('td', {}, h('a', { href: '#/trial/' + r.trial_id }, r.trial_id.split('/')[1]));
    if (k === 'state') return h('td', {}, h('span', { class: 'badge ' + r.state }, r.state));
    if (k === 'attempt') return h('td', {}, r.attempt);
    if (k === 'worker') return h('td', {}, r.worker || '');
    if (k === 'duration') return h('td', {}, r.duration_s ? r.duration_s.toFixed(1) : '');
    if (k === 'seed') return h('td', {}, r.seed);
    if (k === 'exit') return h('td', { class: 'exit' }, exitText(r));
    if (k === 'error') return h('td', { class: 'error', title: r.error || null }, errorText(r));
    if (k.startsWith('p.')) return h('td', {}, fmt(r.params?.[k.slice(2)]));
    return h('td', {}, fmt(r.results?.[k.slice(2)]));
  };
  const table = h('table', { class: 'grid trials' },
    h('thead', {}, h('tr', {}, h('th', { title: 'overlay learning curves' }, '☑'), head.map(([k, label]) => h('th', {
      class: 'sortable' + (k === sortKey ? (desc ? ' desc' : ' asc') : ''), 'data-col': k,
      onclick: () => onChange({ sort: k === sortKey && !desc ? '-' + k : k, page: 0 }),
    }, label)))),
    h('tbody', {}, page.rows.map((r) => h('tr', { 'data-trial': r.trial_id },
      h('td', {}, h('input', {
        type: 'checkbox', class: 'pick-trial', checked: selected.has(r.trial_id.split('/')[1]) ? '' : null,
        title: 'overlay this trial\'s learning curves', onchange: () => onSelect && onSelect(r.trial_id),
      })),
      head.map(([k]) => cell(r, k))))));
  c.body.appendChild(h('div', { class: 'scroll' }, table));
  const csvValue = (r, k) => {
    if (k === 'trial') return r.trial_id;
    if (k === 'state') return r.state;
    if (k === 'attempt') return r.attempt;
    if (k === 'worker') return r.worker;
    if (k === 'duration') return r.duration_s;
    if (k === 'seed') return r.seed;
    if (k === 'exit') return exitText(r);
    if (k === 'error') return r.error || '';
    return k.startsWith('p.') ? r.params?.[k.slice(2)] : r.results?.[k.slice(2)];
  };
  c.tool('CSV', () => download('trials.csv', new Blob([toCsv(head.map((x) => x[1]),
    page.rows.map((r) => head.map(([k]) => csvValue(r, k))))], { type: 'text/csv' })), 'csv');
}

function parseJson(s, fallback) {
  try {
    return s ? JSON.parse(s) : fallback;
  } catch {
    return fallback;
  }
}

// The parameters a tuned view can select per x (issue 33): axes with more
// than one value that are not on x, lines or panels.
function tunableAxes(sweep, st) {
  if (!sweep || sweep.kind !== 'sraven') return [];
  return sweep.axes.filter((a) => a.values.length > 1 && ![st.x, st.series, st.facet].includes(a.name))
    .map((a) => a.name);
}

// Optimal x when every x gets its own best `tune` (selected on the
// validation split; GET .../analysis/tuned), beside the fixed
// configurations' table above: the chosen values per x and line.
function tunedSection(box, tuned) {
  if (tuned.error) {
    box.appendChild(h('p', { class: 'error', id: 'tuned-error' }, `Tuned view: ${tuned.error}`));
    return;
  }
  const pseudo = { x: tuned.x, series: tuned.series, facet: tuned.facet, metric: tuned.metric,
    optimal: tuned.tuned.map((s) => s.optimal) };
  optimalTable(box, pseudo, {
    id: 'tuned-table',
    title: `Optimal ${tuned.x} with ${tuned.tune.join(', ')} tuned per ${tuned.x} ` +
      `(selected on ${tuned.select_by}, per ${tuned.select_per}; ${metricName(tuned.metric)})`,
    extra: {
      header: `chosen ${tuned.tune.join(', ')} per ${tuned.x}`,
      cell: (i) => tuned.tuned[i].points.map((p) => `${p.x_label}: ` +
        Object.entries(p.chosen_count).map(([c, n]) => `${c} (${n} seed${n === 1 ? '' : 's'})`).join(', ')).join('; '),
    },
  });
  for (const n of tuned.notes) box.appendChild(h('p', { class: 'muted' }, n));
  window.__smoe.tuned = tuned.tuned.map((s) => ({ series: s.series_label, best: s.optimal.best }));
}

async function renderSweep(id, q) {
  // null = not in the URL: the sweep's own default (data.js defaultView).
  const st = {
    x: q.get('x'), series: q.get('series'), facet: q.get('facet'), metric: q.get('metric'),
    tune: q.get('tune') || '',
    points: q.get('points') === '1',
    band: q.get('band') || 'ci', theory: q.get('theory') === '1', log: q.get('log') !== '0',
    q: q.get('q') || '', state: q.get('state') || '', sort: q.get('sort') || '',
    page: Number(q.get('page') || 0), charts: [],
    pc: parseJson(q.get('pc'), {}), pcm: q.get('pcm') ? q.get('pcm').split(',').filter(Boolean) : null,
    sel: q.get('sel') ? q.get('sel').split(',').filter(Boolean) : [], cm: q.get('cm') || '',
    hide: q.get('hide') ? q.get('hide').split(',').filter(Boolean) : [],
  };
  let defaults = null;
  const pageSize = 50;
  crumbs.replaceChildren(h('a', { href: '#/' }, 'sweeps'), ' / ', h('b', {}, id));
  const head = h('div', { class: 'sweep-head' });
  const controls = h('div', { class: 'controls' });
  const charts = h('div', { class: 'charts', id: 'charts' });
  const exploreBox = h('div', { id: 'explore' });
  const tableBox = h('div', { id: 'table' });
  const overlayBox = h('div', { id: 'overlay' });
  const searchBox = h('div', { id: 'search' });
  app.replaceChildren(head, controls, charts, exploreBox, searchBox, tableBox, overlayBox);

  let sweep = null;
  let columns = { params: [], results: [] };
  let lastPage = null;
  const drawHead = (sw) => {
    head.replaceChildren(h('h2', {}, sw.sweep_id, ' ', sweepBadge(sw, 'sweep-state')),
      h('div', { class: 'muted' }, `${sw.kind} · ` + sw.axes.map((a) => `${a.name} ∈ {${a.values.join(', ')}}`).join(' × ') + ` × seeds {${sw.seeds.join(', ')}}`),
      h('div', { id: 'sweep-progress' }, progress(sw.counts)),
      sw.unschedulable ? h('div', { class: 'alert', id: 'sweep-unschedulable' }, 'Unschedulable: ' + sw.unschedulable) : '',
      sweepActions(sw, () => loadTable().catch(showError)));
  };
  const saveQuery = () => {
    if (!defaults) return;
    const nq = new URLSearchParams();
    for (const k of Object.keys(defaults)) {
      if (st[k] !== defaults[k]) nq.set(k, typeof st[k] === 'boolean' ? (st[k] ? '1' : '0') : st[k]);
    }
    if (Object.keys(st.pc).length) nq.set('pc', JSON.stringify(st.pc));
    if (st.pcm) nq.set('pcm', st.pcm.join(','));
    if (st.sel.length) nq.set('sel', st.sel.join(','));
    if (st.cm) nq.set('cm', st.cm);
    if (st.hide.length) nq.set('hide', st.hide.join(','));
    setQuery(nq);
  };
  const onTableChange = (change) => {
    const chartsToo = 'pc' in change;
    Object.assign(st, change);
    saveQuery();
    loadTable().catch(showError);
    if (chartsToo) loadCharts().catch(showError);
  };
  const toggleTrial = (trialId) => {
    const hex = trialId.split('/')[1];
    st.sel = st.sel.includes(hex) ? st.sel.filter((x) => x !== hex) : [...st.sel, hex];
    saveQuery();
    for (const box of document.querySelectorAll(`tr[data-trial="${CSS.escape(trialId)}"] input.pick-trial`)) {
      box.checked = st.sel.includes(hex);
    }
    loadOverlay().catch(showError);
  };
  // Overlapping loads (controls changed quickly, live refreshes): only the
  // newest request draws.
  let tableGen = 0;
  let chartsGen = 0;
  const loadTable = async () => {
    const gen = ++tableGen;
    let page;
    let error = null;
    try {
      page = await api('sweeps/' + encodeURIComponent(id), {
        offset: st.page * pageSize, limit: pageSize, sort: st.sort, q: tableQuery(st.q, st.pc), state: st.state,
      });
    } catch (e) {
      // A bad filter (unknown field, `<` on a word): keep the last page and
      // say what is wrong under the filter box.
      if (!(e instanceof ApiError) || e.status !== 400) throw e;
      // (A shared URL with a bad filter: the unfiltered first page.)
      page = lastPage || await api('sweeps/' + encodeURIComponent(id), { offset: 0, limit: pageSize, state: st.state });
      error = e.message;
    }
    if (gen !== tableGen) return page;
    lastPage = page;
    sweep = page.sweep;
    st.axes = sweep.axes; // sampled axes: their declared scale (xAxisScale)
    columns = page.columns;
    if (!defaults) {
      defaults = {
        ...defaultView(sweep, columns.results), tune: '', points: false, band: 'ci', theory: false, log: true,
        q: '', state: '', sort: '', page: 0,
      };
      for (const k of ['x', 'series', 'facet', 'metric']) if (st[k] === null) st[k] = defaults[k];
    }
    drawHead(sweep);
    renderSearch(searchBox, id).catch(() => searchBox.replaceChildren());
    tableBox.replaceChildren();
    trialTable(tableBox, page, st, onTableChange, { error, onSelect: toggleTrial });
    window.__smoe.tableMatched = page.matched;
    window.__smoe.filterError = error;
    return page;
  };

  // Learning curves of the ticked trials, overlaid (same metric, same axes).
  const loadOverlay = async () => {
    if (!st.sel.length) {
      overlayBox.replaceChildren(h('h3', { class: 'section' }, 'Learning curves of selected trials'),
        h('p', { class: 'muted', id: 'overlay-empty' }, 'Tick trials in the table (or click lines in the parallel-coordinates plot) to overlay their learning curves.'));
      delete window.__smoe.charts.overlay;
      return;
    }
    const got = await Promise.all(st.sel.map((hex) => api(`trials/${id}/${hex}/metrics`, { max_points: 500 })
      .then((t) => ({ hex, t })).catch(() => ({ hex, t: null }))));
    const names = [...new Set(got.flatMap((g) => (g.t ? Object.keys(g.t.metrics) : [])))]
      .filter((n) => !/^router\/layer\d+\/expert/.test(n)).sort();
    const metric = names.includes(st.cm) ? st.cm
      : names.find((n) => n === 'train/loss') || names.find((n) => n.startsWith('eval/')) || names[0] || '';
    const pick = h('label', {}, 'curve ', h('select', {
      id: 'overlay-metric',
      onchange: (e) => { st.cm = e.target.value; saveQuery(); loadOverlay().catch(showError); },
    }, names.map((n) => h('option', { value: n, selected: n === metric ? '' : null }, n))));
    const clear = h('button', { type: 'button', class: 'link', onclick: () => {
      st.sel = [];
      saveQuery();
      document.querySelectorAll('input.pick-trial').forEach((b) => { b.checked = false; });
      loadOverlay().catch(showError);
    } }, 'clear selection');
    const box = h('div', { class: 'grid-charts' });
    overlayBox.replaceChildren(h('h3', { class: 'section' }, `Learning curves of selected trials (${st.sel.length})`),
      h('div', { class: 'controls' }, pick, clear), box);
    const withCurve = got.filter((g) => g.t && g.t.metrics[metric]);
    if (!withCurve.length) {
      box.appendChild(h('p', { class: 'muted empty' }, `None of the selected trials reported ${metric || 'a curve'} yet.`));
      return;
    }
    const label = (g) => {
      const p = g.t.params || {};
      const axes = sweep ? sweep.axes.map((a) => `${a.name}=${p[a.name]}`).join(' ') : '';
      return `${g.hex.slice(0, 6)} ${axes} s${g.t.seed}`;
    };
    const byLabel = {};
    withCurve.forEach((g) => { byLabel[label(g)] = g.t.metrics[metric]; });
    const labels = Object.keys(byLabel);
    const { xs, values } = alignSeries(byLabel, labels);
    const chart = lineChart(box, 'overlay', `${metric}: ${labels.length} trial(s)`, {
      xs, xLabel: 'step', yLabel: metric,
      series: labels.map((l, i) => ({ label: l, color: PALETTE[i % PALETTE.length], values: values[i] })),
    }, 'one line per selected trial; labels: trial id prefix, swept parameters, seed');
    overlayCharts.forEach((u) => u.destroy());
    overlayCharts = [chart.u];
  };
  let overlayCharts = [];

  // The parallel-coordinates plot over the swept parameters and the chosen
  // metrics, from the succeeded trials (the first 5000).
  const exploreSection = async (rows, matched, gen) => {
    const metrics = plottableMetrics(columns.results);
    const chosen = (st.pcm || (sweep.kind === 'sraven' ? ['ood_acc', 'test_acc'] : metrics.slice(0, 3)))
      .filter((m) => metrics.includes(m));
    const pickers = h('div', { class: 'controls', id: 'parcoords-metrics' }, 'metrics: ', metrics.map((m) => h('label', {},
      h('input', {
        type: 'checkbox', 'data-metric': m, checked: chosen.includes(m) ? '' : null,
        onchange: (e) => {
          const next = e.target.checked ? [...chosen, m] : chosen.filter((x) => x !== m);
          st.pcm = next;
          for (const k of Object.keys(st.pc)) if (!sweep.axes.some((a) => a.name === k) && !next.includes(k)) delete st.pc[k];
          saveQuery();
          loadCharts().catch(showError);
          loadTable().catch(showError);
        },
      }), ' ' + m)));
    const box = h('div', { class: 'grid-charts' });
    exploreBox.replaceChildren(h('h3', { class: 'section' }, 'Explore: parallel coordinates'), pickers, box);
    const dims = [
      ...sweep.axes.map((a) => ({ name: a.name, kind: 'param', values: a.values })),
      ...chosen.map((m) => ({ name: m, kind: 'result' })),
    ];
    if (dims.length < 2 || !rows.length) {
      box.appendChild(h('p', { class: 'muted empty' }, rows.length ? 'Needs at least two axes.' : 'No succeeded trials yet.'));
      return;
    }
    // d3 (brushes, scales, axes) is loaded with the first plot: a chunk of
    // its own, so the rest of the dashboard does not wait for it.
    const { parallelCoords } = await import('./explore.js');
    if (gen !== chartsGen) return;
    parallelCoords(box, {
      dims, rows, brushes: st.pc, matched,
      onBrush: (b) => { st.pc = b; st.page = 0; saveQuery(); loadTable().catch(showError); },
      onPick: toggleTrial,
    });
  };

  const loadCharts = async () => {
    const gen = ++chartsGen;
    const params = { x: st.x, series: st.series, facet: st.facet };
    if (sweep.kind === 'skillmix') {
      const sm = await api(`sweeps/${encodeURIComponent(id)}/skillmix`);
      if (gen !== chartsGen) return;
      st.charts.forEach((u) => u.destroy());
      st.charts = [];
      window.__smoe.charts = {};
      const plotBox = h('div', { class: 'grid-charts', id: 'skillmix-plots' });
      const bestBox = h('div', { class: 'grid-charts', id: 'skillmix-best-box' });
      const box = h('div', { class: 'grid-charts', id: 'skillmix-tables' });
      charts.replaceChildren(h('h3', { class: 'section' }, `Skill-Mix: metric vs ${sm.rows}, a line per ${sm.cols}`), plotBox,
        bestBox, h('h3', { class: 'section' }, `Skill-Mix: ${sm.rows} × ${sm.cols}`), box);
      if (sm.tables.length) {
        skillMixBestTable(bestBox, sm, skillMixCharts(plotBox, sm, st));
      } else {
        plotBox.appendChild(h('p', { class: 'muted empty' }, 'No finished Skill-Mix trials yet.'));
      }
      for (const t of sm.tables) {
        heatTable(box, `skillmix-${t.metric}`, `${metricName(t.metric)} (mean ± s.e.)`,
          { ...t, rowName: sm.rows, colName: sm.cols });
      }
      window.__smoe.version = sm.version;
      return;
    }
    // The paper's view (SRAVEN, OOD accuracy) also plots test accuracy; the
    // E(k, N) theory is about top_k against M only.
    const paper = sweep.kind === 'sraven' && st.metric === 'ood_acc';
    st.theoryAxes = sweep.kind === 'sraven' && st.x === 'top_k' && st.series === 'M';
    const base = `sweeps/${encodeURIComponent(id)}`;
    const tunable = tunableAxes(sweep, st);
    if (st.tune && !tunable.includes(st.tune)) st.tune = '';
    const [ood, test, table, search, tuned] = await Promise.all([
      st.metric && st.x ? api(`${base}/analysis`, { ...params, metric: st.metric }) : null,
      paper ? api(`${base}/curves`, { ...params, metric: 'test_acc' }) : null,
      api(base, { limit: 5000, state: 'succeeded' }),
      api(`${base}/search`).catch(() => null),
      st.tune && st.metric && st.x
        ? api(`${base}/analysis/tuned`, { ...params, metric: st.metric, tune: st.tune })
          .catch((e) => ({ error: e.message }))
        : null,
    ]);
    if (gen !== chartsGen) return;
    st.search = search;
    st.charts.forEach((u) => u.destroy());
    st.charts = [];
    const keep = window.__smoe.charts.overlay;
    window.__smoe.charts = keep ? { overlay: keep } : {};
    const headBox = h('div', { class: 'grid-charts', id: 'headline' });
    const optBox = h('div', { class: 'grid-charts', id: 'optimal' });
    const fitBox = h('div', { class: 'grid-charts', id: 'fit' });
    const yName = paper ? 'Accuracy' : metricName(st.metric);
    const blocks = [h('h3', { class: 'section' }, `${yName} vs ${st.x}` + (st.series ? `: one line per ${st.series}` : '') +
      (st.facet ? `, a panel per ${st.facet}` : '')), headBox,
    h('h3', { class: 'section' }, `Optimal ${st.x}`), optBox];
    if (st.theoryAxes) blocks.push(h('h3', { class: 'section' }, 'Theory: E(k,N) = a·N²/k + b·√(N·k/m·log(T/k))'), fitBox);
    charts.replaceChildren(...blocks);
    if (!ood) {
      headBox.appendChild(h('p', { class: 'muted empty' }, st.metric ? 'Pick a parameter for x.' : 'No metrics reported yet.'));
    } else {
      headlineCharts(headBox, ood.curves, ood.optimal, ood.fits, st, table.rows);
      if (test) headlineCharts(headBox, test, test.optimal, [], st, table.rows);
      if (ood.optimal.length) {
        optimalCharts(optBox, ood, st);
        optimalTable(optBox, ood);
        if (tuned) tunedSection(optBox, tuned);
      } else {
        optBox.appendChild(h('p', { class: 'muted empty' }, 'Needs succeeded trials.'));
      }
      if (ood.fits.length && st.theoryAxes) fitSection(fitBox, ood, st);
      window.__smoe.version = ood.version;
      window.__smoe.trialsUsed = ood.curves.trials_used;
    }
    await exploreSection(table.rows, table.matched, gen);
  };
  const axisNames = () => (sweep ? sweep.axes.map((a) => a.name) : []);
  let otherSweeps = null;
  const drawControls = async () => {
    if (sweep.kind === 'skillmix') {
      controls.replaceChildren();
      return;
    }
    const names = ['', ...new Set([...axisNames(), ...(sweep.kind === 'sraven' ? ['top_k', 'M', 'attention'] : [])])];
    const redraw = () => { saveQuery(); loadCharts().catch(showError); };
    const sel = (key, label, opts) => h('label', {}, label + ' ', h('select', {
      id: 'control-' + key,
      onchange: (e) => { st[key] = e.target.value; redraw(); },
    }, opts.map(([v, l]) => h('option', { value: v, selected: v === String(st[key]) ? '' : null }, l))));
    const check = (key, label) => h('label', {}, h('input', {
      type: 'checkbox', id: 'control-' + key, checked: st[key] ? '' : null,
      onchange: (e) => { st[key] = e.target.checked; redraw(); },
    }), ' ' + label);
    const metrics = plottableMetrics(columns.results);
    if (st.metric && !metrics.includes(st.metric)) metrics.unshift(st.metric);
    if (otherSweeps === null) otherSweeps = (await api('sweeps').catch(() => ({ sweeps: [] }))).sweeps;
    const compare = h('label', {}, 'compare with ', h('select', {
      id: 'compare-with',
      onchange: (e) => {
        if (!e.target.value) return;
        const cq = new URLSearchParams({ metric: st.metric, x: st.x, series: st.series });
        location.hash = `#/compare/${encodeURIComponent(id)}/${encodeURIComponent(e.target.value)}?${cq}`;
      },
    }, h('option', { value: '' }, '(another sweep)'),
    otherSweeps.filter((o) => o.sweep_id !== id && o.kind !== 'skillmix').map((o) => h('option', { value: o.sweep_id }, o.sweep_id))));
    controls.replaceChildren(
      sel('metric', 'y', metrics.map((m) => [m, m])),
      sel('x', 'x', names.filter(Boolean).map((n) => [n, n])),
      sel('series', 'lines', names.map((n) => [n, n || '(none)'])),
      sel('facet', 'panels', names.map((n) => [n, n || '(none)'])),
      sel('band', 'band', [['ci', 'bootstrap CI'], ['sem', '± s.e.m.']]),
      tunableAxes(sweep, st).length
        ? sel('tune', 'tune', [['', '(fixed configurations)'], ...tunableAxes(sweep, st).map((n) => [n, `${n} per ${st.x} (on val_acc)`])])
        : '',
      check('points', 'trials as dots'),
      sweep.kind === 'sraven' ? check('theory', 'theory overlay') : '', check('log', 'log₂ x'), compare);
  };

  await loadTable();
  await drawControls();
  await loadCharts();
  await loadOverlay();
  window.__smoe.ready = true;
  window.__smoe.firstRenderMs = performance.now();

  // Live updates: counts at once; charts and table at most every ~1 s.
  let pending = null;
  let last = 0;
  const refresh = () => {
    if (pending) return;
    const wait = Math.max(250, 1000 - (Date.now() - last));
    pending = setTimeout(async () => {
      pending = null;
      last = Date.now();
      try {
        await loadTable();
        await loadCharts();
        window.__smoe.updates = (window.__smoe.updates || 0) + 1;
      } catch (e) {
        showError(e);
      }
    }, wait);
  };
  const close = watchSweep(id, (ev) => {
    if (sweep) {
      sweep.counts = ev.counts;
      sweep.state = ev.state;
      drawHead(sweep);
    }
    for (const r of ev.changed || []) {
      const row = document.querySelector(`tr[data-trial="${CSS.escape(r.trial_id)}"] .badge`);
      if (row) {
        row.textContent = r.state;
        row.className = 'badge ' + r.state;
      }
    }
    refresh();
  }, setLive);
  cleanup.push(close, () => pending && clearTimeout(pending), () => st.charts.forEach((u) => u.destroy()),
    () => overlayCharts.forEach((u) => u.destroy()));
}

// Two sweeps side by side on the same axes: the same metric against the same
// parameter, a line per the same parameter, one y range for both.
async function renderCompare(a, b, q) {
  crumbs.replaceChildren(h('a', { href: '#/' }, 'sweeps'), ' / compare ', h('b', {}, a), ' vs ', h('b', {}, b));
  const [pa, pb] = await Promise.all([a, b].map((s) => api('sweeps/' + encodeURIComponent(s), { limit: 0 })));
  const common = pa.sweep.axes.map((x) => x.name).filter((n) => pb.sweep.axes.some((y) => y.name === n));
  const metricsA = plottableMetrics(pa.columns.results);
  const metrics = metricsA.filter((m) => plottableMetrics(pb.columns.results).includes(m));
  const dv = defaultView(pa.sweep, metrics);
  const st = {
    metric: q.get('metric') || (metrics.includes(dv.metric) ? dv.metric : metrics[0] || ''),
    x: q.get('x') || (common.includes(dv.x) ? dv.x : common[0] || ''),
    series: q.get('series') ?? (common.includes(dv.series) ? dv.series : ''),
    band: q.get('band') || 'ci',
  };
  const controls = h('div', { class: 'controls' });
  const box = h('div', { class: 'grid-charts compare', id: 'compare' });
  app.replaceChildren(h('h2', {}, `Compare ${a} and ${b}`), controls, box);
  const charts = [];
  const draw = async () => {
    const nq = new URLSearchParams(Object.entries(st).filter(([, v]) => v !== ''));
    setQuery(nq);
    charts.forEach((u) => u.destroy());
    charts.length = 0;
    window.__smoe.charts = {};
    if (!st.metric || !st.x) {
      box.replaceChildren(h('p', { class: 'muted empty' }, 'The two sweeps share no metric or no swept parameter.'));
      return;
    }
    const opts = { metric: st.metric, x: st.x, series: st.series, facet: '' };
    const [ca, cb] = await Promise.all([a, b].map((s) => api(`sweeps/${encodeURIComponent(s)}/curves`, opts)));
    const yRange = sharedRange(ca, cb);
    const xs = numericXs([...ca.facets, ...cb.facets]);
    const categorical = xs.some((x) => typeof x !== 'number');
    // Both columns exist before either chart is sized, so each gets half.
    const cols = [a, b].map((name) => h('div', { class: 'compare-col', 'data-sweep': name }));
    box.replaceChildren(...cols);
    [[a, ca], [b, cb]].forEach(([name, cur], i) => {
      const col = cols[i];
      const facet = cur.facets[0];
      if (!facet) {
        col.appendChild(h('p', { class: 'muted empty' }, `${name}: no succeeded trials with ${st.metric}.`));
        return;
      }
      const series = seriesFromCurves(facet, xs, st.band, cur.optimal, PALETTE);
      for (const s of series) if (!s.markers && cur.series) s.label = `${cur.series}=${s.label}`;
      const c = lineChart(col, `compare-${i}`, `${name}: ${metricName(st.metric)} vs ${st.x}`, {
        xs: categorical ? xs.map((_, j) => j) : xs, xTickLabels: categorical ? xs.map(String) : null,
        series, yRange, ...xScaleFlags(xAxisScale(pa.sweep.axes, st.x, categorical ? [] : xs)), xLabel: st.x, yLabel: metricName(st.metric),
      }, `same x values and y range as the other panel; band: ${st.band === 'sem' ? 'mean ± s.e.m.' : 'bootstrap CI'} over seeds`);
      window.__smoe.charts[`compare-${i}`].yRange = yRange;
      window.__smoe.charts[`compare-${i}`].xs = xs;
      charts.push(c.u);
    });
  };
  const sel = (key, label, opts) => h('label', {}, label + ' ', h('select', {
    id: 'compare-' + key, onchange: (e) => { st[key] = e.target.value; draw().catch(showError); },
  }, opts.map((v) => h('option', { value: v, selected: v === st[key] ? '' : null }, v || '(none)'))));
  controls.replaceChildren(sel('metric', 'y', metrics), sel('x', 'x', common), sel('series', 'lines', ['', ...common]),
    h('a', { href: '#/sweep/' + encodeURIComponent(a) }, `open ${a}`), ' ',
    h('a', { href: '#/sweep/' + encodeURIComponent(b) }, `open ${b}`));
  await draw();
  window.__smoe.ready = true;
  cleanup.push(() => charts.forEach((u) => u.destroy()));
}

// A sweep's state badge: a completed sweep with failed trials is not green.
function sweepBadge(s, id) {
  const failed = (s.counts && s.counts.failed) || 0;
  const cls = s.state === 'completed' && failed ? 'completed-failed' : s.state;
  const text = failed ? `${s.state} · ${failed} failed` : s.state;
  const attrs = { class: 'badge ' + cls, title: s.unschedulable ? 'unschedulable: ' + s.unschedulable : '' };
  if (id) attrs.id = id;
  return h('span', attrs, s.unschedulable ? text + ' · unschedulable' : text);
}

// ---- trial page -------------------------------------------------------------------

// Every attempt of a trial: worker, outcome, exit code and message.
function attemptsTable(attempts) {
  if (!attempts.length) return h('p', { class: 'muted', id: 'attempts' }, 'Not started yet.');
  return h('table', { class: 'grid attempts', id: 'attempts' },
    h('thead', {}, h('tr', {}, ['attempt', 'worker', 'outcome', 'exit code', 'message', 'started', 'ended'].map((c) => h('th', {}, c)))),
    h('tbody', {}, attempts.map((a) => h('tr', {},
      h('td', {}, String(a.attempt)),
      h('td', {}, a.worker),
      h('td', {}, h('span', { class: 'badge ' + a.outcome }, a.outcome)),
      h('td', {}, a.outcome === 'running' ? '' : String(a.exit_code)),
      h('td', { class: 'message' }, a.message),
      h('td', { class: 'muted' }, fmtTime(a.started_ms)),
      h('td', { class: 'muted' }, a.ended_ms == null ? '' : fmtTime(a.ended_ms))))));
}

async function renderTrial(trialId) {
  const sweepId = trialId.split('/')[0];
  crumbs.replaceChildren(h('a', { href: '#/' }, 'sweeps'), ' / ',
    h('a', { href: '#/sweep/' + encodeURIComponent(sweepId) }, sweepId), ' / ', h('b', {}, trialId.split('/')[1] || ''));
  const [t, search] = await Promise.all([api(`trials/${trialId}/metrics`),
    api(`sweeps/${encodeURIComponent(sweepId)}/search`).catch(() => null)]);
  const box = h('div', { class: 'grid-charts' });
  const logs = logsSection(trialId, h, t.attempts || []);
  cleanup.push(logs.stop);
  app.replaceChildren(h('h2', {}, trialId, ' ', h('span', { class: 'badge ' + t.state }, t.state)),
    h('p', { class: 'muted' }, `seed ${t.seed} · ` + Object.entries(t.params || {}).map(([k, v]) => `${k}=${v}`).join(' · ')),
    trialActions(trialId, t.state, () => route()), attemptsTable(t.attempts || []),
    artifactsSection(trialId, h), box, logs.el);
  const names = Object.keys(t.metrics);
  const charts = [];
  const draw = (id, title, list, yLabel, note, extra = {}) => {
    const present = list.filter((n) => t.metrics[n]);
    if (!present.length) return;
    const { xs, values } = alignSeries(t.metrics, present);
    charts.push(lineChart(box, id, title, {
      xs, xLabel: 'step', yLabel, ...extra,
      series: present.map((n, i) => ({ label: n.replace(/^router\/layer\d+\//, ''), color: PALETTE[i % PALETTE.length], values: values[i] })),
    }, note).u);
  };
  const groups = trialMetricGroups(names);
  draw('trial-loss', 'Training loss', groups.loss, 'loss');
  draw('trial-lr', 'Learning rate', groups.lr, 'learning rate',
    'warmup, then cosine decay to 0.1 lr (docs/sraven.md)');
  // Adaptive sweeps: the rung steps (dashed) and this trial's decisions there
  // (red: pruned, green: promoted).
  const rungs = rungLines(search);
  const decided = trialDecisionPoints(search, trialId);
  draw('trial-acc', 'Accuracy', groups.eval, 'accuracy',
    rungs.length || decided.length ? `dashed: ASHA rungs; dots: this trial's decisions (red prune, green promote) on ${search.metric}` : undefined,
    { vlines: rungs, overlay: decided });
  const layers = [...new Set(names.map((n) => n.match(/^router\/layer(\d+)\//)?.[1]).filter(Boolean))].sort((a, b) => a - b);
  for (const l of layers) {
    const experts = names.filter((n) => n.startsWith(`router/layer${l}/expert`) && n.endsWith('_frac'))
      .sort((a, b) => Number(a.match(/expert(\d+)/)[1]) - Number(b.match(/expert(\d+)/)[1]));
    draw(`trial-router-${l}`, `Router expert load — layer ${l}`, experts, 'fraction of tokens',
      'Share of routed tokens per expert; uniform load is 1/num_experts × top_k');
  }
  draw('trial-entropy', 'Router entropy per layer', names.filter((n) => /^router\/layer\d+\/entropy$/.test(n)), 'entropy (nats)');
  // System metrics (sys/*, from the worker's heartbeats): GPU series are
  // absent, not zero, when the worker cannot measure them.
  const gpuNote = names.includes('sys/gpu_util_percent') ? undefined
    : 'GPU utilisation and memory: not measured (a CPU trial, or no NVML on the worker)';
  draw('trial-sys-cpu', 'CPU and GPU utilisation', ['sys/cpu_percent', 'sys/gpu_util_percent'],
    '% (100 = one core)', gpuNote);
  draw('trial-sys-mem', 'Memory', ['sys/rss_mb', 'sys/gpu_mem_mb'], 'MB', gpuNote);
  if (groups.other.length) draw('trial-other', 'Other metrics', groups.other, 'value');
  if (!names.length) box.appendChild(h('p', { class: 'muted empty' }, 'No metrics reported yet.'));
  window.__smoe.ready = true;
  cleanup.push(() => charts.forEach((u) => u.destroy()));
}

// ---- router --------------------------------------------------------------------------

function showError(e) {
  if (e && e.status === 401) return;
  app.prepend(h('div', { class: 'error' }, String(e && e.message ? e.message : e)));
}

async function route() {
  cleanup.forEach((f) => f());
  cleanup = [];
  window.__smoe.ready = false;
  window.__smoe.charts = {};
  live.textContent = '';
  const { parts, q } = parseHash();
  try {
    if (parts[0] === 'sweep' && parts[1]) await renderSweep(parts[1], q);
    else if (parts[0] === 'trial' && parts.length >= 3) await renderTrial(parts[1] + '/' + parts[2]);
    else if (parts[0] === 'compare' && parts.length >= 3) await renderCompare(parts[1], parts[2], q);
    else if (parts[0] === 'workers') {
      cleanup.push(await renderWorkers(app, crumbs, h, q));
      window.__smoe.ready = true;
    }
    else await renderSweeps(q);
  } catch (e) {
    showError(e);
  }
}

document.getElementById('logout').addEventListener('click', async () => {
  await fetch('/logout', { method: 'POST' });
  toLogin();
});
window.addEventListener('hashchange', route);
// Back from /login: return to the route that needed the sign-in (the
// hashchange renders it).
const next = sessionStorage.getItem('smoe.next');
sessionStorage.removeItem('smoe.next');
if (next && next !== '#/' && (!location.hash || location.hash === '#/')) {
  location.hash = next;
} else {
  route();
}
