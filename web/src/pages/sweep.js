// One sweep (#/sweep/<id>): its head and actions, the chart controls, the
// headline / optimal / fit charts (or Skill-Mix tables), the parallel-
// coordinates explorer, the adaptive search, the trials table and the
// learning-curve overlay of the ticked trials; live over the sweep's events.
// The page's state is one object (`p`, newPage) that every loader reads.
import { ApiError, api, watchSweep } from '../api.js';
import { sweepActions } from '../actions.js';
import { PALETTE, heatTable, lineChart } from '../chart.js';
import {
  alignSeries, companionMetrics, defaultView, hasTheory, metricName, plottableMetrics, selectBy, tableQuery,
  theoryApplies, viewLayout,
} from '../data.js';
import { renderSearch } from '../search.js';
import { app, crumbs, h, onLeave, progress, setLive, setQuery, showError, sweepBadge } from '../page.js';
import {
  fitSection, headlineCharts, optimalCharts, optimalTable, parseJson, skillMixBestTable, skillMixCharts,
  trialTable, tunableAxes, tunedSection,
} from './sweep_sections.js';

const pageSize = 50;

// The view in the URL (null = not in the URL: the sweep's own default,
// data.js defaultView).
function viewFromQuery(q) {
  return {
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
}

// The page's state and boxes (in page order).
function newPage(id, q) {
  return {
    id,
    st: viewFromQuery(q),
    defaults: null,
    sweep: null,
    columns: { params: [], results: [] },
    lastPage: null,
    // Overlapping loads (controls changed quickly, live refreshes): only the
    // newest request draws.
    tableGen: 0,
    chartsGen: 0,
    overlayCharts: [],
    otherSweeps: null,
    head: h('div', { class: 'sweep-head' }),
    controls: h('div', { class: 'controls' }),
    charts: h('div', { class: 'charts', id: 'charts' }),
    exploreBox: h('div', { id: 'explore' }),
    searchBox: h('div', { id: 'search' }),
    tableBox: h('div', { id: 'table' }),
    overlayBox: h('div', { id: 'overlay' }),
  };
}

function drawHead(p, sw) {
  p.head.replaceChildren(h('h2', {}, sw.sweep_id, ' ', sweepBadge(sw, 'sweep-state')),
    h('div', { class: 'muted' }, `${sw.kind} · ` + sw.axes.map((a) => `${a.name} ∈ {${a.values.join(', ')}}`).join(' × ') + ` × seeds {${sw.seeds.join(', ')}}`),
    h('div', { id: 'sweep-progress' }, progress(sw.counts)),
    sw.unschedulable ? h('div', { class: 'alert', id: 'sweep-unschedulable' }, 'Unschedulable: ' + sw.unschedulable) : '',
    sweepActions(sw, () => loadTable(p).catch(showError)));
}

function saveQuery(p) {
  const { st, defaults } = p;
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
}

function onTableChange(p, change) {
  const chartsToo = 'pc' in change;
  Object.assign(p.st, change);
  saveQuery(p);
  loadTable(p).catch(showError);
  if (chartsToo) loadCharts(p).catch(showError);
}

function toggleTrial(p, trialId) {
  const { st } = p;
  const hex = trialId.split('/')[1];
  st.sel = st.sel.includes(hex) ? st.sel.filter((x) => x !== hex) : [...st.sel, hex];
  saveQuery(p);
  for (const box of document.querySelectorAll(`tr[data-trial="${CSS.escape(trialId)}"] input.pick-trial`)) {
    box.checked = st.sel.includes(hex);
  }
  loadOverlay(p).catch(showError);
}

async function loadTable(p) {
  const { id, st } = p;
  const gen = ++p.tableGen;
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
    page = p.lastPage || await api('sweeps/' + encodeURIComponent(id), { offset: 0, limit: pageSize, state: st.state });
    error = e.message;
  }
  if (gen !== p.tableGen) return page;
  p.lastPage = page;
  p.sweep = page.sweep;
  p.st.axes = p.sweep.axes; // sampled axes: their declared scale (xAxisScale)
  p.columns = page.columns;
  if (!p.defaults) {
    p.defaults = {
      ...defaultView(p.sweep, p.columns.results), tune: '', points: false, band: 'ci', theory: false, log: true,
      q: '', state: '', sort: '', page: 0,
    };
    for (const k of ['x', 'series', 'facet', 'metric']) if (st[k] === null) st[k] = p.defaults[k];
  }
  drawHead(p, p.sweep);
  renderSearch(p.searchBox, id).catch(() => p.searchBox.replaceChildren());
  p.tableBox.replaceChildren();
  trialTable(p.tableBox, page, st, (change) => onTableChange(p, change),
    { error, onSelect: (trialId) => toggleTrial(p, trialId) });
  window.__smoe.tableMatched = page.matched;
  window.__smoe.filterError = error;
  return page;
}

// Learning curves of the ticked trials, overlaid (same metric, same axes).
async function loadOverlay(p) {
  const { id, st, overlayBox } = p;
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
    onchange: (e) => { st.cm = e.target.value; saveQuery(p); loadOverlay(p).catch(showError); },
  }, names.map((n) => h('option', { value: n, selected: n === metric ? '' : null }, n))));
  const clear = h('button', { type: 'button', class: 'link', onclick: () => {
    st.sel = [];
    saveQuery(p);
    document.querySelectorAll('input.pick-trial').forEach((b) => { b.checked = false; });
    loadOverlay(p).catch(showError);
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
    const params = g.t.params || {};
    const axes = p.sweep ? p.sweep.axes.map((a) => `${a.name}=${params[a.name]}`).join(' ') : '';
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
  p.overlayCharts.forEach((u) => u.destroy());
  p.overlayCharts = [chart.u];
}

// The parallel-coordinates plot over the swept parameters and the chosen
// metrics, from the succeeded trials (the first 5000).
async function exploreSection(p, rows, matched, gen) {
  const { st, sweep } = p;
  const metrics = plottableMetrics(p.columns.results);
  const chosen = (st.pcm || (sweep.view?.headline_metrics?.length ? sweep.view.headline_metrics : metrics.slice(0, 3)))
    .filter((m) => metrics.includes(m));
  const pickers = h('div', { class: 'controls', id: 'parcoords-metrics' }, 'metrics: ', metrics.map((m) => h('label', {},
    h('input', {
      type: 'checkbox', 'data-metric': m, checked: chosen.includes(m) ? '' : null,
      onchange: (e) => {
        const next = e.target.checked ? [...chosen, m] : chosen.filter((x) => x !== m);
        st.pcm = next;
        for (const k of Object.keys(st.pc)) if (!sweep.axes.some((a) => a.name === k) && !next.includes(k)) delete st.pc[k];
        saveQuery(p);
        loadCharts(p).catch(showError);
        loadTable(p).catch(showError);
      },
    }), ' ' + m)));
  const box = h('div', { class: 'grid-charts' });
  p.exploreBox.replaceChildren(h('h3', { class: 'section' }, 'Explore: parallel coordinates'), pickers, box);
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
  const { parallelCoords } = await import('../explore.js');
  if (gen !== p.chartsGen) return;
  parallelCoords(box, {
    dims, rows, brushes: st.pc, matched,
    onBrush: (b) => { st.pc = b; st.page = 0; saveQuery(p); loadTable(p).catch(showError); },
    onPick: (trialId) => toggleTrial(p, trialId),
  });
}

// A Skill-Mix sweep's charts: metric vs rows, a line per column, the best
// per row, and the rows x columns tables.
async function loadSkillMixCharts(p, gen) {
  const { st } = p;
  const sm = await api(`sweeps/${encodeURIComponent(p.id)}/skillmix`);
  if (gen !== p.chartsGen) return;
  st.charts.forEach((u) => u.destroy());
  st.charts = [];
  window.__smoe.charts = {};
  const plotBox = h('div', { class: 'grid-charts', id: 'skillmix-plots' });
  const bestBox = h('div', { class: 'grid-charts', id: 'skillmix-best-box' });
  const box = h('div', { class: 'grid-charts', id: 'skillmix-tables' });
  p.charts.replaceChildren(h('h3', { class: 'section' }, `Skill-Mix: metric vs ${sm.rows}, a line per ${sm.cols}`), plotBox,
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
}

async function loadCharts(p) {
  const { id, st, sweep } = p;
  const gen = ++p.chartsGen;
  const params = { x: st.x, series: st.series, facet: st.facet };
  if (viewLayout(sweep) === 'tables') {
    await loadSkillMixCharts(p, gen);
    return;
  }
  // The kind's view metric is charted with its companions (SRAVEN: OOD
  // accuracy, then test accuracy); the E(k, N) theory is about the view's
  // theory axes only (SRAVEN: top_k against M).
  const companions = st.x ? companionMetrics(sweep, st) : [];
  st.theoryAxes = theoryApplies(sweep, st);
  const base = `sweeps/${encodeURIComponent(id)}`;
  const tunable = tunableAxes(sweep, st);
  if (st.tune && !tunable.includes(st.tune)) st.tune = '';
  const [ood, others, table, search, tuned] = await Promise.all([
    st.metric && st.x ? api(`${base}/analysis`, { ...params, metric: st.metric }) : null,
    Promise.all(companions.map((m) => api(`${base}/curves`, { ...params, metric: m }))),
    api(base, { limit: 5000, state: 'succeeded' }),
    api(`${base}/search`).catch(() => null),
    st.tune && st.metric && st.x
      ? api(`${base}/analysis/tuned`, { ...params, metric: st.metric, tune: st.tune, select_by: selectBy(sweep) })
        .catch((e) => ({ error: e.message }))
      : null,
  ]);
  if (gen !== p.chartsGen) return;
  st.search = search;
  st.charts.forEach((u) => u.destroy());
  st.charts = [];
  const keep = window.__smoe.charts.overlay;
  window.__smoe.charts = keep ? { overlay: keep } : {};
  const headBox = h('div', { class: 'grid-charts', id: 'headline' });
  const optBox = h('div', { class: 'grid-charts', id: 'optimal' });
  const fitBox = h('div', { class: 'grid-charts', id: 'fit' });
  const yName = [st.metric, ...companions].filter(Boolean).map(metricName).join(' and ') || metricName(st.metric);
  const blocks = [h('h3', { class: 'section' }, `${yName} vs ${st.x}` + (st.series ? `: one line per ${st.series}` : '') +
    (st.facet ? `, a panel per ${st.facet}` : '')), headBox,
  h('h3', { class: 'section' }, `Optimal ${st.x}`), optBox];
  if (st.theoryAxes) blocks.push(h('h3', { class: 'section' }, 'Theory: E(k,N) = a·N²/k + b·√(N·k/m·log(T/k))'), fitBox);
  p.charts.replaceChildren(...blocks);
  if (!ood) {
    headBox.appendChild(h('p', { class: 'muted empty' }, st.metric ? 'Pick a parameter for x.' : 'No metrics reported yet.'));
  } else {
    headlineCharts(headBox, ood.curves, ood.optimal, ood.fits, st, table.rows);
    for (const c of others) headlineCharts(headBox, c, c.optimal, [], st, table.rows);
    if (ood.optimal.length) {
      optimalCharts(optBox, ood, st);
      optimalTable(optBox, ood);
      if (tuned) tunedSection(optBox, tuned, st);
    } else {
      optBox.appendChild(h('p', { class: 'muted empty' }, 'Needs succeeded trials.'));
    }
    if (ood.fits.length && st.theoryAxes) fitSection(fitBox, ood, st);
    window.__smoe.version = ood.version;
    window.__smoe.trialsUsed = ood.curves.trials_used;
  }
  await exploreSection(p, table.rows, table.matched, gen);
}

function axisNames(p) {
  return p.sweep ? p.sweep.axes.map((a) => a.name) : [];
}

// The chart controls: y, x, lines, panels, band, tune, dots, theory, log x,
// and a sweep to compare with.
async function drawControls(p) {
  const { id, st, sweep, controls } = p;
  if (viewLayout(sweep) === 'tables') {
    controls.replaceChildren();
    return;
  }
  const names = ['', ...new Set([...axisNames(p), ...(sweep.view ? [sweep.view.x, sweep.view.series, sweep.view.facet].filter(Boolean) : [])])];
  const redraw = () => { saveQuery(p); loadCharts(p).catch(showError); };
  const sel = (key, label, opts) => h('label', {}, label + ' ', h('select', {
    id: 'control-' + key,
    onchange: (e) => { st[key] = e.target.value; redraw(); },
  }, opts.map(([v, l]) => h('option', { value: v, selected: v === String(st[key]) ? '' : null }, l))));
  const check = (key, label) => h('label', {}, h('input', {
    type: 'checkbox', id: 'control-' + key, checked: st[key] ? '' : null,
    onchange: (e) => { st[key] = e.target.checked; redraw(); },
  }), ' ' + label);
  const metrics = plottableMetrics(p.columns.results);
  if (st.metric && !metrics.includes(st.metric)) metrics.unshift(st.metric);
  if (p.otherSweeps === null) p.otherSweeps = (await api('sweeps').catch(() => ({ sweeps: [] }))).sweeps;
  const compare = h('label', {}, 'compare with ', h('select', {
    id: 'compare-with',
    onchange: (e) => {
      if (!e.target.value) return;
      const cq = new URLSearchParams({ metric: st.metric, x: st.x, series: st.series });
      location.hash = `#/compare/${encodeURIComponent(id)}/${encodeURIComponent(e.target.value)}?${cq}`;
    },
  }, h('option', { value: '' }, '(another sweep)'),
  p.otherSweeps.filter((o) => o.sweep_id !== id && viewLayout(o) !== 'tables').map((o) => h('option', { value: o.sweep_id }, o.sweep_id))));
  controls.replaceChildren(
    sel('metric', 'y', metrics.map((m) => [m, m])),
    sel('x', 'x', names.filter(Boolean).map((n) => [n, n])),
    sel('series', 'lines', names.map((n) => [n, n || '(none)'])),
    sel('facet', 'panels', names.map((n) => [n, n || '(none)'])),
    sel('band', 'band', [['ci', 'bootstrap CI'], ['sem', '± s.e.m.']]),
    tunableAxes(sweep, st).length
      ? sel('tune', 'tune', [['', '(fixed configurations)'], ...tunableAxes(sweep, st).map((n) => [n, `${n} per ${st.x} (on ${selectBy(sweep)})`])])
      : '',
    check('points', 'trials as dots'),
    hasTheory(sweep) ? check('theory', 'theory overlay') : '', check('log', 'log₂ x'), compare);
}

// Live updates: counts at once; charts and table at most every ~1 s.
function watchLive(p) {
  let pending = null;
  let last = 0;
  const refresh = () => {
    if (pending) return;
    const wait = Math.max(250, 1000 - (Date.now() - last));
    pending = setTimeout(async () => {
      pending = null;
      last = Date.now();
      try {
        await loadTable(p);
        await loadCharts(p);
        window.__smoe.updates = (window.__smoe.updates || 0) + 1;
      } catch (e) {
        showError(e);
      }
    }, wait);
  };
  const close = watchSweep(p.id, (ev) => {
    if (p.sweep) {
      p.sweep.counts = ev.counts;
      p.sweep.state = ev.state;
      drawHead(p, p.sweep);
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
  onLeave(close, () => pending && clearTimeout(pending), () => p.st.charts.forEach((u) => u.destroy()),
    () => p.overlayCharts.forEach((u) => u.destroy()));
}

export async function renderSweep(id, q) {
  const p = newPage(id, q);
  crumbs.replaceChildren(h('a', { href: '#/' }, 'sweeps'), ' / ', h('b', {}, id));
  app.replaceChildren(p.head, p.controls, p.charts, p.exploreBox, p.searchBox, p.tableBox, p.overlayBox);
  await loadTable(p);
  await drawControls(p);
  await loadCharts(p);
  await loadOverlay(p);
  window.__smoe.ready = true;
  window.__smoe.firstRenderMs = performance.now();
  watchLive(p);
}
