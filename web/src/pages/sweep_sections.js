// The sweep page's sections (#/sweep/<id>): headline curves, optimal x, the
// E(k,N) fit, Skill-Mix tables, the trials table and the tuned view.
import { PALETTE, card, download, lineChart } from '../chart.js';
import {
  brushTerms, errorText, exitText, fitQuality, fmt, maxSeeds, meanSe,
  metricName, numericXs, optimalUncertainty, pointSeries, selectBy, seriesFromCurves,
  skillMixSeries, theoryAccuracy, toCsv, tunedChoiceSeries, tunedCurveSeries, tunedValueScale,
  xAxisScale, xScaleFlags,
} from '../data.js';
import { prunedOverlay } from '../search.js';
import { h } from '../page.js';

export function headlineCharts(box, curves, optimal, fits, st, rows = []) {
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

export function optimalCharts(box, analysis, st) {
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

export function fitSection(box, analysis, st) {
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

export function optimalTable(box, analysis, { id = 'optimal-table', title = null, extra = null } = {}) {
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
export function skillMixCharts(box, sm, st) {
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

export function skillMixBestTable(box, sm, best) {
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
export function trialTable(box, page, st, onChange, { error, onSelect } = {}) {
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

export function parseJson(s, fallback) {
  try {
    return s ? JSON.parse(s) : fallback;
  } catch {
    return fallback;
  }
}

// The parameters a tuned view can select per x (issue 33): axes with more
// than one value that are not on x, lines or panels, for a kind whose view
// names the validation metric to select by.
export function tunableAxes(sweep, st) {
  if (!selectBy(sweep)) return [];
  return sweep.axes.filter((a) => a.values.length > 1 && ![st.x, st.series, st.facet].includes(a.name))
    .map((a) => a.name);
}

// Optimal x when every x gets its own best `tune` (selected on the
// validation split; GET .../analysis/tuned), beside the fixed
// configurations' table above: the chosen values per x and line, then per
// facet two charts: the tuned curves beside each fixed configuration's, and
// (one tuned parameter) the value chosen per x, on a log scale for a
// log-declared or decade-spanning axis.
export function tunedSection(box, tuned, st) {
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
  tunedCharts(box, tuned, st);
  window.__smoe.tuned = tuned.tuned.map((s) => ({ series: s.series_label, best: s.optimal.best }));
}

function tunedCharts(box, tuned, st) {
  const facets = [...new Set(tuned.tuned.map((s) => s.facet_label))];
  for (const facet of facets) {
    const mine = tuned.tuned.filter((s) => s.facet_label === facet);
    const xs = [...new Set(mine.flatMap((s) => s.points.map((p) => p.x)))]
      .sort((a, b) => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))));
    if (!xs.length) continue;
    const categorical = xs.some((x) => typeof x !== 'number');
    const tick = categorical ? xs.map(String) : null;
    const xsPlot = categorical ? xs.map((_, i) => i) : xs;
    const xFlags = xScaleFlags(xAxisScale(st.axes, tuned.x, categorical ? [] : xs, st.log));
    const where = tuned.facet ? ` — ${tuned.facet}=${facet}` : '';
    const tunedNames = tuned.tune.join(', ');
    const curves = lineChart(box, `tuned-curves-${facet}`,
      `${metricName(tuned.metric)} vs ${tuned.x}: ${tunedNames} tuned per ${tuned.x} vs fixed${where}`, {
        xs: xsPlot, xTickLabels: tick, ...xFlags, series: tunedCurveSeries(tuned, facet, xs, PALETTE),
        xLabel: tuned.x, yLabel: metricName(tuned.metric),
      }, `solid: ${tunedNames} selected on ${tuned.select_by} per ${tuned.select_per} ` +
      `(band: ${Math.round(tuned.ci_level * 100)}% bootstrap CI that re-selects in every resample); ` +
      'dashed: each fixed configuration on its own');
    st.charts.push(curves.u);
    if (tuned.tune.length !== 1) continue;
    const param = tuned.tune[0];
    const choice = tunedChoiceSeries(tuned, facet, param, xs, PALETTE);
    const values = choice.flatMap((s) => s.values).filter((v) => v !== null);
    if (!values.length) continue;
    const log = tunedValueScale(st.axes, param, values) === 'log10';
    const chosen = lineChart(box, `tuned-choice-${facet}`, `${param} chosen per ${tuned.x}${where}`, {
      xs: xsPlot, xTickLabels: tick, ...xFlags, series: choice, yLog10: log,
      xLabel: tuned.x, yLabel: param, height: 240,
    }, `line: the ${param} most seeds chose (selected on ${tuned.select_by})` +
      (choice.some((s) => s.scatter) ? '; dots: every seed\'s choice where seeds differ' : '') +
      (log ? `; log scale` : ''));
    st.charts.push(chosen.u);
  }
}
