// Pure data shaping for the dashboard (no DOM): API JSON -> chart series,
// CSV, labels. Unit-tested with node:test (web/test/data.test.js).

export const METRIC_NAMES = {
  ood_acc: 'OOD accuracy',
  test_acc: 'test accuracy',
  ratio_full_marks: 'Ratio of Full Marks',
  ratio_all_skills: 'Ratio of All Skills',
  skill_fraction: 'Skill Fraction',
  total_score: 'Total Score',
  total_skill_score: 'Total Skill Score',
};
export const metricName = (m) => METRIC_NAMES[m] || m;

// The trial page's charts: which metric goes on which chart. Each chart has
// its own y axis, so a learning rate (~1e-3) never shares one with step-sized
// counters, where it read as a flat zero (issue 31 item 1).
export function trialMetricGroups(names) {
  const isLr = (n) => /(^|\/)lr$/.test(n);
  return {
    loss: names.filter((n) => /loss/.test(n)),
    lr: names.filter(isLr),
    eval: names.filter((n) => /^eval\//.test(n)),
    other: names.filter((n) => !/loss|^eval\/|^router\/|^sys\//.test(n) && !isLr(n)),
  };
}

export function fmt(v, d = 4) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(d);
  return String(v);
}

// The lines (mean, band) and optimal-k markers of one facet at xs.
export function seriesFromCurves(facet, xs, band, optimal, palette) {
  const out = [];
  facet.series.forEach((s, i) => {
    const color = palette[i % palette.length];
    const byX = new Map(s.points.map((p) => [p.x, p]));
    const pick = (f) => xs.map((x) => (byX.has(x) ? f(byX.get(x)) : null));
    out.push({
      label: `${s.label}`,
      color,
      values: pick((p) => p.mean),
      // One seed has no spread: no band there (not a zero-width one).
      lo: pick((p) => (p.n < 2 ? null : band === 'sem' ? p.mean - p.sem : p.ci_lo)),
      hi: pick((p) => (p.n < 2 ? null : band === 'sem' ? p.mean + p.sem : p.ci_hi)),
    });
    const o = optimal.find((o) => o.facet_label === facet.label && o.series_label === s.label);
    if (o) {
      out.push({
        label: `k* ${s.label}`,
        color,
        markers: true,
        values: xs.map((x) => (x === o.best ? o.best_mean : null)),
      });
    }
  });
  return out;
}

export function numericXs(facets, extra = []) {
  const set = new Set(extra);
  for (const f of facets) for (const s of f.series) for (const p of s.points) set.add(p.x);
  return [...set].sort((a, b) => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))));
}

// The fitted total error E(k, N) of one N as accuracy 1 − E per x, clipped to
// [0, 1] (a fit on sparse data can predict E > 1, which is not an accuracy);
// null where the fit has no k.
export function theoryAccuracy(kStar, xs) {
  const byK = new Map(kStar.curve.map(([k, e]) => [k, e === null ? null : Math.min(1, Math.max(0, 1 - e))]));
  return xs.map((x) => (byK.has(x) ? byK.get(x) : null));
}

// Aligns metric series with different steps on the union of their steps.
export function alignSeries(metrics, names) {
  const steps = new Set();
  for (const n of names) metrics[n].steps.forEach((s) => steps.add(s));
  const xs = [...steps].sort((a, b) => a - b);
  const idx = new Map(xs.map((s, i) => [s, i]));
  return {
    xs,
    values: names.map((n) => {
      const out = new Array(xs.length).fill(null);
      metrics[n].steps.forEach((s, i) => { out[idx.get(s)] = metrics[n].values[i]; });
      return out;
    }),
  };
}

export function csvEscape(v) {
  if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

// uPlot's x scale for a line chart. Every x axis here is a parameter value,
// never a time: `time: false` always, or uPlot's default time scale makes the
// hover legend read a log2 axis as a date ("top_k: 1970-01-01 12:00am").
// `base`: the log base when xLog2 is set (10 for a sampled log-uniform axis,
// whose decades are the ticks).
export function xScaleOptions(xLog2, xRange, base = 2) {
  return { time: false, ...(xLog2 ? { distr: 3, log: base } : {}), ...(xRange ? { range: xRange } : {}) };
}

// The x axis scale for parameter `name` with values `xs` (docs/sampled-axes.md):
// 'linear' unless every x is a positive number and the view asks for log
// (`preferLog`, the log toggle); then a sampled axis (the sweep's
// axes[].sampled) is 'log10' where declared log (loguniform) and 'linear'
// otherwise (uniform, int, choice); any other axis 'log2' (k, M, ...).
export function xScaleFlags(scale) {
  return { xLog2: scale === 'log2', xLog10: scale === 'log10' };
}

export function xAxisScale(axes, name, xs, preferLog = true) {
  const positive = xs.length > 0 && xs.every((x) => typeof x === 'number' && x > 0);
  if (!positive || !preferLog) return 'linear';
  const axis = (axes || []).find((a) => a.name === name);
  if (axis && axis.sampled) return axis.log ? 'log10' : 'linear';
  return 'log2';
}

export function toCsv(header, rows) {
  return [header, ...rows].map((r) => r.map(csvEscape).join(',')).join('\n') + '\n';
}

// ---- Skill-Mix ------------------------------------------------------------------
// GET /api/sweeps/{id}/skillmix serves, per result metric, a table
//   {metric, rows: [EPT...], cols: [k_skills...], cells[r][c]: {n, mean, sem} | null}
// with rows and cols ascending. sem is null when it is unknown (one trial that
// reported no s.e. of its own); a cell is null when no trial finished there.

const finite = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// A cell's mean and s.e. (null when missing, NaN or unknown) and n.
function cellStats(cell) {
  const mean = cell ? finite(cell.mean) : null;
  return mean === null ? null : { mean, sem: finite(cell.sem), n: cell.n ?? 0 };
}

// Two means count as tied when they differ by at most this (relative) much:
// the server's means of equal inputs are bit-equal, but CSV round trips and
// sums in another order are not.
const TIE = 1e-12;

// The best and runner-up row (EPT) of column j by mean: argmax of the mean;
// ties go to the smaller EPT (the earlier row; rows are ascending). Each is
// {row, mean, sem, n} or null (no / only one row with a value). gap_se is
// (best − runner-up) / √(s.e.² + s.e.²), null when either s.e. is unknown or
// both are 0.
function bestOfColumn(table, j) {
  const cands = [];
  table.rows.forEach((row, i) => {
    const s = cellStats(table.cells[i]?.[j]);
    if (s) cands.push({ row, ...s });
  });
  const better = (a, b) => a.mean > b.mean + TIE * Math.max(1, Math.abs(b.mean));
  let best = null;
  let runnerUp = null;
  for (const c of cands) {
    if (!best || better(c, best)) {
      runnerUp = best;
      best = c;
    } else if (!runnerUp || better(c, runnerUp)) {
      runnerUp = c;
    }
  }
  let gapSe = null;
  if (best && runnerUp && best.sem !== null && runnerUp.sem !== null) {
    const se = Math.hypot(best.sem, runnerUp.sem);
    if (se > 0) gapSe = (best.mean - runnerUp.mean) / se;
  }
  return { best, runnerUp, gapSe };
}

// The best EPT per k_skills of one Skill-Mix table, one row per column (k):
// {col, best, runner_up, gap_se} (see bestOfColumn).
export function skillMixBest(table) {
  return table.cols.map((col, j) => {
    const { best, runnerUp, gapSe } = bestOfColumn(table, j);
    return { col, best, runner_up: runnerUp, gap_se: gapSe };
  });
}

// One Skill-Mix table as line-chart input: x = the rows (EPT; indices with
// tick labels when not all numbers), a line per column (k_skills) with a
// mean ± s.e. band (no band where the s.e. is unknown), and the best EPT per
// column as a marker series right after its line. colName labels the lines.
//   -> {xs, xTickLabels, categorical, series, best}
export function skillMixSeries(table, palette, colName = 'k_skills') {
  const categorical = !table.rows.every((r) => typeof r === 'number');
  const xs = categorical ? table.rows.map((_, i) => i) : table.rows.slice();
  const best = skillMixBest(table);
  const series = [];
  table.cols.forEach((col, j) => {
    const color = palette[j % palette.length];
    const stats = table.rows.map((_, i) => cellStats(table.cells[i]?.[j]));
    const band = (sign) => stats.map((s) => (s && s.sem !== null ? s.mean + sign * s.sem : null));
    series.push({
      label: `${colName}=${col}`,
      color,
      values: stats.map((s) => (s ? s.mean : null)),
      lo: band(-1),
      hi: band(1),
    });
    const b = best[j].best;
    if (b) {
      const at = table.rows.indexOf(b.row);
      series.push({
        label: `best EPT ${colName}=${col}`,
        color,
        markers: true,
        values: table.rows.map((_, i) => (i === at ? b.mean : null)),
      });
    }
  });
  return { xs, xTickLabels: categorical ? table.rows.map(String) : null, categorical, series, best };
}

// "0.1234 ± 0.0050", "0.1234 ± ?" when the s.e. is unknown, "" for no value.
export function meanSe(s, d = 4) {
  if (!s) return '';
  return `${s.mean.toFixed(d)} ± ${s.sem === null ? '?' : s.sem.toFixed(d)}`;
}

// A theory fit is meaningful when it explains some of the variance: R² < 0
// means the fitted curve is worse than a flat line through the mean.
export const fitMeaningful = (fit) => !!fit && fit.ok && fit.r2 >= 0;

// The fit's quality as shown next to it: R², flagged when not meaningful.
export function fitQuality(fit) {
  const r2 = `R² = ${fit.r2.toFixed(3)}`;
  return fitMeaningful(fit) ? r2 : `${r2}: not meaningful (worse than a flat line)`;
}

// The s.e.m., P(best) and CI cells of one optimal-k row: with a single seed
// there is no spread and nothing to bootstrap, so the s.e.m. is "–" and P and
// CI say "n = 1" instead of a fake certainty.
export function optimalUncertainty(o) {
  if (typeof o.seeds === 'number' && o.seeds < 2) {
    const n = `n = ${o.seeds}`;
    return { sem: '–', p: n, ci: n };
  }
  return { sem: o.best_sem, p: o.best_freq, ci: `[${o.ci_lo}, ${o.ci_hi}]` };
}

// The largest number of seeds behind any point of `curves` (0 when empty).
export function maxSeeds(curves) {
  let n = 0;
  for (const f of curves.facets) for (const s of f.series) for (const p of s.points) n = Math.max(n, p.n || 0);
  return n;
}

// The trials table's error cell: the first line of the trial's last error
// (the API sends only that line), cut at 120 characters; empty when it never
// failed.
export function errorText(r) {
  if (!r.error) return '';
  return r.error.length > 120 ? r.error.slice(0, 119) + '…' : r.error;
}

// The exit-code cell: the latest ended attempt's exit code when the trial
// failed at some point ("" otherwise: a clean run's 0 is noise).
export function exitText(r) {
  return r.error && r.exit_code != null ? String(r.exit_code) : '';
}

// Whether an admin may delete sweep `sw` now (a row of GET /api/sweeps or the
// sweep page's `sweep`), and what the button says: the server refuses (409)
// while any trial is pending or running (Scheduler::DeleteSweep), so the
// button is disabled then with the reason; otherwise the confirmation names
// the trial count. {allowed, live, reason, confirm}.
export function sweepDeletion(sw) {
  const c = (sw && sw.counts) || {};
  const live = (c.pending || 0) + (c.running || 0);
  const total = c.total != null ? c.total
    : ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'pruned'].reduce((n, k) => n + (c[k] || 0), 0);
  const id = sw ? sw.sweep_id : '';
  if (live > 0) {
    return {
      allowed: false, live,
      reason: `${live} trial${live === 1 ? ' is' : 's are'} pending or running: cancel the sweep first, then delete it`,
      confirm: '',
    };
  }
  return {
    allowed: true, live: 0, reason: '',
    confirm: `Delete sweep ${id} and its ${total} trial${total === 1 ? '' : 's'} with all their metrics, results, logs and checkpoints? This cannot be undone.`,
  };
}

// ---- exploration (issue 18 item 3) -------------------------------------------------

// A parameter value as the server labels it (coordinator/views/trial_table.h
// ParamLabel): strings as they are, integral numbers without a decimal point,
// anything else as JSON.
// The labels of a parameter axis of the parallel-coordinates plot: the
// sweep's grid values and any other value a trial has (refine adds top_k
// values between the grid's; without them those trials had no position and
// drew NaN paths), numbers in numeric order.
export function axisLabels(grid, seen) {
  const all = [...(grid || [])];
  const have = new Set(all.map(paramLabel));
  for (const v of seen) {
    if (v === undefined || have.has(paramLabel(v))) continue;
    have.add(paramLabel(v));
    all.push(v);
  }
  if (all.every((v) => typeof v === 'number')) all.sort((a, b) => a - b);
  return all.map(paramLabel);
}

export function paramLabel(v) {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return JSON.stringify(v);
}

// The result columns worth plotting: no per-feature vectors, no standard
// errors that come with a metric.
export function plottableMetrics(results) {
  const set = new Set(results);
  return results.filter((r) => !r.endsWith('_per_feature') && !(r.endsWith('_se') && set.has(r.slice(0, -3))));
}

// The sweep page's default view: the kind's own when the sweep JSON carries
// one (`view`, trials/params.h: SRAVEN keeps the paper's question, accuracy
// vs top_k, a line per M, a panel per attention, OOD accuracy); any other
// sweep (a `kind: command` sweep has its own parameters and metrics) plots
// its own first metric against its first swept parameter, a line per the
// second and a panel per the third (trials::DefaultViewOf, the CLI's).
export function defaultView(sweep, results = []) {
  const v = sweep.view;
  if (v && v.x) return { x: v.x, series: v.series || '', facet: v.facet || '', metric: v.metric || plottableMetrics(results)[0] || '' };
  const axes = (sweep.axes || []).map((a) => a.name);
  const metrics = plottableMetrics(results);
  return { x: axes[0] || '', series: axes[1] || '', facet: axes[2] || '', metric: metrics[0] || '' };
}

// What the kind's view (the sweep JSON's `view`, trials::KindView) says
// beyond the axes: its layout ('tables': the kind's own tables, no curves
// nor chart controls), whether the E(k, N) theory applies to the chosen
// axes, the metrics charted beside the chosen one, and the validation
// metric a tuned view selects by ('' : no tuned view).
export function viewLayout(sweep) {
  return sweep?.view?.layout || 'curves';
}
export function hasTheory(sweep) {
  return !!sweep?.view?.theory;
}
export function theoryApplies(sweep, st) {
  const t = sweep?.view?.theory;
  return !!t && st.x === t.x && st.series === t.series;
}
export function companionMetrics(sweep, st) {
  const v = sweep?.view;
  if (!v || !st.metric || st.metric !== v.metric) return [];
  return (v.headline_metrics || []).filter((m) => m !== st.metric);
}
export function selectBy(sweep) {
  return sweep?.view?.select_by || '';
}

// Individual trials as points over a chart's xs: one point-only series per
// (group, replicate) so that every trial at an x keeps its own y (uPlot
// aligns series on x). rows: the trials table's rows; xs: the chart's x
// values (labels compared as the server labels them); groups: the chart's
// series labels in order (colours follow them). Only rows whose facet label
// is `facetLabel` (when the rows carry the facet parameter) and that have the
// metric count. -> [{label, color, values, scatter: true, legend}]
export function pointSeries(rows, { x, series, facet, facetLabel, metric, xs, groups, palette }) {
  const xIndex = new Map(xs.map((v, i) => [paramLabel(v), i]));
  const buckets = new Map(); // group label -> array per x of values
  for (const r of rows) {
    const y = r.results?.[metric];
    if (typeof y !== 'number' || !Number.isFinite(y)) continue;
    if (facet && r.params && facet in r.params && paramLabel(r.params[facet]) !== String(facetLabel)) continue;
    if (!r.params || !(x in r.params)) continue;
    const xi = xIndex.get(paramLabel(r.params[x]));
    if (xi === undefined) continue;
    const g = series && r.params[series] !== undefined ? paramLabel(r.params[series]) : (groups[0] ?? '');
    if (!buckets.has(g)) buckets.set(g, xs.map(() => []));
    buckets.get(g)[xi].push(y);
  }
  const out = [];
  for (const [g, perX] of buckets) {
    const gi = groups.indexOf(g);
    const color = palette[(gi < 0 ? palette.length - 1 : gi) % palette.length];
    const reps = Math.max(0, ...perX.map((v) => v.length));
    for (let k = 0; k < reps; k++) {
      out.push({
        label: `${series ? `${series}=` : ''}${g} trials${k ? ` #${k + 1}` : ''}`,
        color, scatter: true, legend: k === 0,
        values: perX.map((v) => (k < v.length ? v[k] : null)),
      });
    }
  }
  return out;
}

// Parallel-coordinates brushes: {field: {lo, hi}} (a numeric range, inclusive)
// or {field: {set: [labels]}} (discrete values). As trials-table filter terms
// (coordinator/views/trial_table.h), so the server filters the table the same way.
export function brushTerms(brushes) {
  const terms = [];
  for (const [f, b] of Object.entries(brushes || {})) {
    if (b.set) terms.push(b.set.length ? `${f}=${b.set.join('|')}` : `${f}=\u2205`);
    else terms.push(`${f}>=${b.lo}`, `${f}<=${b.hi}`);
  }
  return terms.join(' ');
}

// Rounds a brushed range outward to 4 significant digits so that the terms
// stay short and the server keeps every trial the plot shows as selected.
export function roundRange(lo, hi) {
  const down = (v) => {
    if (v === 0) return 0;
    const p = 10 ** (Math.floor(Math.log10(Math.abs(v))) - 3);
    return Number((Math.floor(v / p + 1e-9) * p).toPrecision(4));
  };
  const up = (v) => 0 - down(-v);
  return { lo: down(Math.min(lo, hi)), hi: up(Math.max(lo, hi)) };
}

// Whether a trials-table row passes every brush (rows without a brushed
// column do not).
export function rowPasses(row, brushes) {
  for (const [f, b] of Object.entries(brushes || {})) {
    const v = row.params && f in row.params ? row.params[f] : row.results?.[f];
    if (v === undefined || v === null) return false;
    if (b.set) {
      if (!b.set.includes(paramLabel(v))) return false;
    } else if (typeof v !== 'number' || v < b.lo || v > b.hi) {
      return false;
    }
  }
  return true;
}

// The trials-table query: what the user typed and the brushes' terms.
export function tableQuery(q, brushes) {
  return [q || '', brushTerms(brushes)].filter(Boolean).join(' ');
}

// A common y range for side-by-side charts: min and max over every value and
// band edge of both curves sets (null when there is none).
export function sharedRange(...curvesList) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const c of curvesList) {
    for (const f of c.facets || []) for (const s of f.series) for (const p of s.points) {
      for (const v of [p.mean, p.ci_lo, p.ci_hi, p.mean - (p.sem || 0), p.mean + (p.sem || 0)]) {
        if (typeof v === 'number' && Number.isFinite(v)) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
  }
  if (lo > hi) return null;
  const pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.05 || 0.05;
  return [lo - pad, hi + pad];
}

// ---- workers (workers.js) ----------------------------------------------------

// "12s", "3m05s", "1h02m" (as `smoe workers`).
export function fmtAge(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

// The summary line: counts per state and the slots in use on live workers.
export function workersSummary(r) {
  const n = { ready: 0, draining: 0, stopped: 0, lost: 0 };
  let used = 0;
  let slots = 0;
  for (const w of r.workers) {
    n[w.state] = (n[w.state] || 0) + 1;
    if (w.state === 'ready' || w.state === 'paused' || w.state === 'draining') {
      used += w.slots_used;
      slots += w.slots;
    }
  }
  const paused = n.paused ? `${n.paused} paused, ` : '';
  let s = `${r.workers.length} worker${r.workers.length === 1 ? '' : 's'}: ${n.ready} ready, ${paused}${n.draining} draining, ` +
    `${n.stopped} stopped, ${n.lost} lost; ${used}/${slots} slots in use`;
  if (r.hidden) s += `; ${r.hidden} silent for more than a day not shown`;
  return s;
}

// ---- the tuned view's charts (issue 33; pages/sweep_sections.js) ------------

// The tuned curve of each series of one facet beside each fixed
// configuration's own curve (the untuned comparison), at xs: per series a
// solid line with its bootstrap CI band (which re-selects in every
// resample), and a thin dashed line per configuration, in the series' colour.
// `tuned`: GET /api/sweeps/{id}/analysis/tuned.
export function tunedCurveSeries(tuned, facetLabel, xs, palette) {
  const out = [];
  const mine = tuned.tuned.filter((s) => s.facet_label === facetLabel);
  mine.forEach((s, i) => {
    const color = palette[i % palette.length];
    const byX = new Map(s.points.map((p) => [p.x, p]));
    const pick = (f) => xs.map((x) => (byX.has(x) ? f(byX.get(x)) : null));
    const prefix = tuned.series ? `${tuned.series}=${s.series_label}` : 'tuned';
    out.push({
      label: tuned.series ? `${prefix}, tuned` : prefix, color,
      values: pick((p) => p.mean),
      lo: pick((p) => (p.n < 2 ? null : p.ci_lo)),
      hi: pick((p) => (p.n < 2 ? null : p.ci_hi)),
    });
    for (const u of tuned.untuned) {
      const facet = (u.curves.facets || []).find((f) => f.label === facetLabel);
      const line = facet && facet.series.find((x) => x.label === s.series_label);
      if (!line) continue;
      const at = new Map(line.points.map((p) => [p.x, p.mean]));
      out.push({
        label: tuned.series ? `${tuned.series}=${s.series_label}, ${u.config}` : u.config,
        color, dash: [4, 3], width: 1,
        values: xs.map((x) => (at.has(x) ? at.get(x) : null)),
      });
    }
  });
  return out;
}

// The y scale for the values of tuned parameter `name` (as xAxisScale, in
// base 10): 'log10' for a sampled axis declared log, or a grid axis of
// positive numbers spanning at least a factor of 10 (learning rates);
// 'linear' otherwise.
export function tunedValueScale(axes, name, values) {
  const nums = values.filter((v) => typeof v === 'number');
  if (!nums.length || nums.length !== values.length || nums.some((v) => v <= 0)) return 'linear';
  const axis = (axes || []).find((a) => a.name === name);
  if (axis && axis.sampled) return axis.log ? 'log10' : 'linear';
  return Math.max(...nums) / Math.min(...nums) >= 10 ? 'log10' : 'linear';
}

// The value of tuned parameter `param` that each series of one facet chose
// per x (does the best lr move with k?). Per series: a line through the
// value most seeds chose (ties: the smaller value), and, when seeds chose
// differently, every chosen value as a dot (one scatter series per rank of
// the distinct values at an x). Null where nothing is known (a config label
// the untuned list does not have, or a non-numeric value).
export function tunedChoiceSeries(tuned, facetLabel, param, xs, palette) {
  const valueOf = new Map(tuned.untuned.map((u) => [u.config, u.values?.[param]]));
  const out = [];
  const mine = tuned.tuned.filter((s) => s.facet_label === facetLabel);
  mine.forEach((s, i) => {
    const color = palette[i % palette.length];
    const byX = new Map(s.points.map((p) => [p.x, p]));
    const chosenAt = xs.map((x) => {
      const p = byX.get(x);
      if (!p) return [];
      return Object.entries(p.chosen_count)
        .map(([label, n]) => ({ v: valueOf.get(label), n }))
        .filter((c) => typeof c.v === 'number');
    });
    const label = tuned.series ? `${tuned.series}=${s.series_label}` : param;
    out.push({
      label, color,
      values: chosenAt.map((cs) => (cs.length
        ? [...cs].sort((a, b) => b.n - a.n || a.v - b.v)[0].v : null)),
    });
    const ranks = Math.max(0, ...chosenAt.map((cs) => cs.length));
    if (ranks < 2) return;
    for (let r = 0; r < ranks; r++) {
      out.push({
        label: `${label}: every seed's choice`, color, scatter: true, legend: false,
        values: chosenAt.map((cs) => {
          const vs = [...new Set(cs.map((c) => c.v))].sort((a, b) => a - b);
          return r < vs.length ? vs[r] : null;
        }),
      });
    }
  });
  return out;
}
