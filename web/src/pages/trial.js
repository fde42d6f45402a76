// One trial (#/trial/<sweep>/<hex>): attempts, artifacts, learning curves,
// router telemetry, system metrics and the log.
import { api } from '../api.js';
import { trialActions } from '../actions.js';
import { artifactsSection } from '../artifacts.js';
import { PALETTE, lineChart } from '../chart.js';
import { alignSeries, trialMetricGroups } from '../data.js';
import { logsSection } from '../logs.js';
import { rungLines, trialDecisionPoints } from '../search.js';
import { app, crumbs, fmtTime, h, onLeave } from '../page.js';

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

// `rerender` draws the page again (after a cancel or retry).
export async function renderTrial(trialId, rerender) {
  const sweepId = trialId.split('/')[0];
  crumbs.replaceChildren(h('a', { href: '#/' }, 'sweeps'), ' / ',
    h('a', { href: '#/sweep/' + encodeURIComponent(sweepId) }, sweepId), ' / ', h('b', {}, trialId.split('/')[1] || ''));
  const [t, search] = await Promise.all([api(`trials/${trialId}/metrics`),
    api(`sweeps/${encodeURIComponent(sweepId)}/search`).catch(() => null)]);
  const box = h('div', { class: 'grid-charts' });
  const logs = logsSection(trialId, h, t.attempts || []);
  onLeave(logs.stop);
  app.replaceChildren(h('h2', {}, trialId, ' ', h('span', { class: 'badge ' + t.state }, t.state)),
    h('p', { class: 'muted' }, `seed ${t.seed} · ` + Object.entries(t.params || {}).map(([k, v]) => `${k}=${v}`).join(' · ')),
    trialActions(trialId, t.state, () => rerender()), attemptsTable(t.attempts || []),
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
  onLeave(() => charts.forEach((u) => u.destroy()));
}
