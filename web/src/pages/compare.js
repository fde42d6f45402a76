// Two sweeps side by side (#/compare/<a>/<b>): the same metric against the
// same parameter, a line per the same parameter, one y range for both.
import { api } from '../api.js';
import { PALETTE, lineChart } from '../chart.js';
import {
  defaultView, metricName, numericXs, plottableMetrics, seriesFromCurves, sharedRange, xAxisScale, xScaleFlags,
} from '../data.js';
import { app, crumbs, h, onLeave, setQuery, showError } from '../page.js';

// Two sweeps side by side on the same axes: the same metric against the same
// parameter, a line per the same parameter, one y range for both.
export async function renderCompare(a, b, q) {
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
  onLeave(() => charts.forEach((u) => u.destroy()));
}
