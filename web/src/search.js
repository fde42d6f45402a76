// Adaptive sweeps (docs/adaptive-sweeps.md): the sweep page's search panel.
// Kept out of main.js: one call there (renderSearch) and the pruned badge
// style in style.css.
import { api } from './api.js';

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

const num = (v) => (v === null || v === undefined ? '–' : Number(v).toPrecision(3));

// "12,345 / 40,000 trial-steps (31%; 3.2× fewer than the full grid)".
export function usageText(s) {
  const used = s.trial_steps_used || 0;
  const full = s.full_grid_trial_steps || 0;
  if (!full) return `${used} trial-steps`;
  const pct = (100 * used) / full;
  const fewer = used > 0 ? ` ${(full / used).toFixed(1)}× fewer than the full grid` : '';
  return `${used.toLocaleString('en-US')} / ${full.toLocaleString('en-US')} trial-steps used / full-grid estimate (${pct.toFixed(0)}%;${fewer})`;
}

// "0.52 GPU-hours used / 2.1 full-grid estimate" (device: GPU, or slot for
// CPU trials: attempts' wall time x devices).
export function deviceHoursText(s) {
  if (s.device_hours_used === undefined || s.device_hours_used === null) return '';
  const unit = `${s.device || 'GPU'}-hours`;
  const fmtH = (h) => (h >= 10 ? h.toFixed(1) : h.toPrecision(2));
  const est = s.device_hours_full_grid_estimate;
  // budget_gpu_hours (0 = none): the search stops starting, promoting and
  // adding trials once it is spent (counted in the same unit).
  const budget = s.budget_gpu_hours > 0
    ? ` · budget ${fmtH(s.budget_gpu_hours)}${s.device_hours_used >= s.budget_gpu_hours ? ' (spent)' : ''}` : '';
  return `${fmtH(s.device_hours_used)} ${unit} used / ` +
    (est === null || est === undefined ? '– full-grid estimate' : `${fmtH(est)} full-grid estimate`) + budget;
}

// The pruned trials of `s` drawn on an accuracy-vs-x chart: those whose
// params match the facet (facetKey = facetLabel; no facet: all), at
// x = params[xKey] (mapped through `xIndex` for a categorical axis), y = the
// value they were stopped at. Only when the chart's metric is the search
// metric.
export function prunedOverlay(s, { metric, xKey, facetKey, facetLabel, xIndex }) {
  if (!s || !s.adaptive || !s.pruned_points) return [];
  const bare = (m) => String(m || '').replace(/^eval\//, '');
  if (bare(metric) !== bare(s.metric)) return [];
  const out = [];
  for (const p of s.pruned_points) {
    if (p.value === null || p.value === undefined) continue;
    if (facetKey && String(p.params[facetKey]) !== String(facetLabel)) continue;
    let x = p.params[xKey];
    if (x === undefined) continue;
    if (xIndex) {
      x = xIndex.get(String(x));
      if (x === undefined) continue;
    }
    out.push({ x, y: p.value, label: `pruned at step ${p.step}${p.final ? '' : ' (may resume)'}` });
  }
  return out;
}

// ASHA rung steps as vertical markers for a learning curve.
export function rungLines(s) {
  return ((s && s.rungs) || []).map((step, i) => ({ x: step, label: `rung ${i}` }));
}

// A trial's decisions with a value (prune / promote at a rung) as points.
export function trialDecisionPoints(s, trialId) {
  return ((s && s.decisions) || [])
    .filter((d) => d.trial_id === trialId && d.value !== null && d.value !== undefined && d.step > 0)
    .map((d) => ({ x: d.step, y: d.value, label: d.action + (d.final ? ' (final)' : ''),
      color: d.action === 'prune' ? '#c0392b' : '#2e7d32' }));
}

// A frontier row's state as shown: the group's settled decision when the
// budget settled it (`budget`: nothing more is added for it, x* not
// resolved), else the state refine computes now. `why` says which budget:
// 'GPU-hours' (search.budget_gpu_hours), 'trials' (search.budget) or ''.
export function frontierState(g) {
  const budget = g.settled === 'budget' || g.state === 'budget';
  if (!budget) return { state: g.state, label: g.state, why: '', title: g.reason || '' };
  const reason = g.settled_reason || g.reason || '';
  const why = /budget_gpu_hours/.test(reason) ? 'GPU-hours' : /budget \d+ trials/.test(reason) ? 'trials' : '';
  return { state: 'budget', label: why ? `budget (${why})` : 'budget', why, title: reason };
}

// "2 of 16 groups settled by the GPU-hour budget (x* not resolved)"; '' when
// none.
export function frontierBudgetNote(s) {
  const rows = (s && s.frontier) || [];
  const hours = rows.filter((g) => frontierState(g).why === 'GPU-hours').length;
  const trials = rows.filter((g) => frontierState(g).state === 'budget').length - hours;
  const parts = [];
  if (hours) parts.push(`${hours} of ${rows.length} groups settled by the GPU-hour budget`);
  if (trials) parts.push(`${trials} of ${rows.length} groups settled by the trial budget`);
  return parts.length ? `${parts.join('; ')} (x* not resolved)` : '';
}

// Refine's frontier, one row per group: the x tried (x* bold, stopped
// early struck through), x*, its mean, P(argmax = x*) and the state (a
// group settled by a budget reads `budget (GPU-hours)`, with the reason as
// its tooltip).
function frontierTable(s) {
  if (!s.frontier || !s.frontier.length) return '';
  const rows = s.frontier.map((g) => {
    const st = frontierState(g);
    const stopped = new Set(g.stopped || []);
    const xs = (g.tried || []).flatMap((x, i) => [i ? ', ' : '',
      x === g.best && !stopped.has(x) ? el('b', {}, String(x))
        : stopped.has(x) ? el('s', { class: 'muted', title: 'stopped early' }, String(x))
          : String(x)]);
    return el('tr', { class: 'frontier ' + st.state, title: st.title },
      el('td', {}, g.group || '(all)'),
      el('td', { class: 'mono' }, xs),
      el('td', {}, g.best ? String(g.best) : '–'),
      el('td', {}, num(g.best_mean)),
      el('td', {}, g.best_freq ? num(g.best_freq) : '–'),
      el('td', {}, el('span', { class: 'badge ' + (st.state === 'resolved' ? 'succeeded' : st.state) }, st.label)));
  });
  return el('table', { class: 'decisions', id: 'search-frontier' },
    el('thead', {}, el('tr', {}, ['group', `${s.axis || 'x'} tried`, 'x*', 'mean at x*', 'P(argmax = x*)', 'state'].map((c) => el('th', {}, c)))),
    el('tbody', {}, rows));
}

// One decision row: seq, trial (short), action (+ rung, final), value vs cutoff, reason.
function decisionRow(d) {
  // The trial by its parameters ("top_k=4 seed 1"), its hash after it.
  const hash = d.trial_id ? d.trial_id.slice(d.trial_id.indexOf('/') + 1) : '';
  const who = !d.trial_id ? `group ${d.group}` : d.trial_label ? `${d.trial_label} (${hash.slice(0, 8)})` : hash;
  const action = d.action + (d.rung >= 0 && d.trial_id ? ` @ rung ${d.rung}` : '') + (d.final ? ' (final)' : '');
  return el('tr', { class: 'decision ' + d.action },
    el('td', {}, String(d.seq)),
    el('td', { class: 'mono' }, who),
    el('td', {}, el('span', { class: 'badge ' + (d.action === 'prune' ? 'pruned' : d.action) }, action)),
    el('td', {}, d.trial_id ? `${num(d.value)} vs ${num(d.cutoff)}` : ''),
    el('td', { class: 'reason' }, d.reason));
}

// Renders the search panel of sweep `sweepId` into `box` (empty for a grid
// sweep). Returns the JSON it drew (null for grid).
export async function renderSearch(box, sweepId) {
  const s = await api(`sweeps/${encodeURIComponent(sweepId)}/search`);
  if (!s.adaptive) {
    box.replaceChildren();
    return null;
  }
  const rows = s.decisions.slice().reverse().map(decisionRow);
  const hours = deviceHoursText(s);
  box.replaceChildren(
    el('h3', { class: 'section' }, `Search: ${s.strategy}${s.early_stop ? ` + ${s.early_stop}` : ''} on ${s.metric}`),
    el('div', { class: 'muted', id: 'search-usage' }, usageText(s),
      s.pruned.length ? ` · ${s.pruned.length} pruned` : ''),
    hours ? el('div', { class: 'muted', id: 'search-hours' }, hours) : '',
    s.rungs && s.rungs.length ? el('div', { class: 'muted', id: 'search-rungs' }, `rungs at steps ${s.rungs.join(', ')}` +
      (s.smooth_evals > 1 ? ` (a rung's value: mean of the last ${s.smooth_evals} evaluations)` : '')) : '',
    s.frontier && s.frontier.length ? el('h4', {}, 'Refine frontier') : '',
    frontierBudgetNote(s) ? el('div', { class: 'muted', id: 'search-frontier-budget' }, frontierBudgetNote(s)) : '',
    frontierTable(s),
    el('table', { class: 'decisions', id: 'search-decisions' },
      el('thead', {}, el('tr', {}, ['#', 'trial', 'decision', 'value vs cutoff', 'reason'].map((c) => el('th', {}, c)))),
      el('tbody', {}, rows)),
    s.decisions_total > s.decisions.length
      ? el('div', { class: 'muted' }, `the newest ${s.decisions.length} of ${s.decisions_total} decisions`) : '');
  return s;
}
