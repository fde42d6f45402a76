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

// One decision row: seq, trial (short), action (+ rung, final), value vs cutoff, reason.
function decisionRow(d) {
  const who = d.trial_id ? d.trial_id.slice(d.trial_id.indexOf('/') + 1) : `group ${d.group}`;
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
  box.replaceChildren(
    el('h3', { class: 'section' }, `Search: ${s.strategy} on ${s.metric}`),
    el('div', { class: 'muted', id: 'search-usage' }, usageText(s),
      s.pruned.length ? ` · ${s.pruned.length} pruned` : ''),
    el('table', { class: 'decisions', id: 'search-decisions' },
      el('thead', {}, el('tr', {}, ['#', 'trial', 'decision', 'value vs cutoff', 'reason'].map((c) => el('th', {}, c)))),
      el('tbody', {}, rows)),
    s.decisions_total > s.decisions.length
      ? el('div', { class: 'muted' }, `the newest ${s.decisions.length} of ${s.decisions_total} decisions`) : '');
  return s;
}
