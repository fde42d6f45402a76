// Exploration views of the sweep page (issue 18 item 3): the parallel-
// coordinates plot over swept parameters and chosen metrics, brushable and
// linked to the trials table. d3 modules draw it (scales, axes, brushes,
// line paths): uPlot has no parallel coordinates. The brushes become
// trials-table filter terms (data.js brushTerms), so the server filters the
// table exactly as the plot highlights.
import { axisLeft } from 'd3-axis';
import { brushY } from 'd3-brush';
import { scaleLinear, scalePoint } from 'd3-scale';
import { select } from 'd3-selection';
import { line } from 'd3-shape';
import { card, download } from './chart.js';
import { axisLabels, brushTerms, paramLabel, roundRange, rowPasses, toCsv } from './data.js';

const HEIGHT = 300;
const MARGIN = { top: 28, right: 40, bottom: 14, left: 40 };
const SVGNS = 'http://www.w3.org/2000/svg';

// dims: [{name, kind: 'param' | 'result', values (params: the axis values)}]
// rows: trials-table rows (params, results). brushes: {field: {lo, hi} |
// {set}} restored from the URL. onBrush(brushes) after a brush gesture ends;
// onPick(trialId) when a line is clicked.
export function parallelCoords(parent, { dims, rows, brushes, onBrush, onPick, matched }) {
  const c = card(parent, `Parallel coordinates: ${dims.map((d) => d.name).join(', ')}`, {
    id: 'parcoords',
    note: 'Drag along an axis to select a range (click the axis outside the selection to clear it); ' +
      'the trials table below shows only the selected trials. Click a line to add that trial to the curve overlay.',
  });
  const state = { brushes: { ...(brushes || {}) } };
  const value = (r, d) => (d.kind === 'param' ? r.params?.[d.name] : r.results?.[d.name]);
  const usable = rows.filter((r) => dims.every((d) => {
    const v = value(r, d);
    return d.kind === 'param' ? v !== undefined : typeof v === 'number' && Number.isFinite(v);
  }));
  const width = Math.max(520, Math.min(1400, 150 * dims.length));
  const x = scalePoint().domain(dims.map((d) => d.name)).range([MARGIN.left, width - MARGIN.right]);
  const ys = new Map();
  for (const d of dims) {
    if (d.kind === 'param') {
      const labels = axisLabels(d.values, usable.map((r) => value(r, d)));
      ys.set(d.name, scalePoint().domain(labels).range([HEIGHT - MARGIN.bottom, MARGIN.top]).padding(0.3));
    } else {
      const vals = usable.map((r) => value(r, d));
      const lo = vals.length ? Math.min(...vals) : 0;
      const hi = vals.length ? Math.max(...vals) : 1;
      ys.set(d.name, scaleLinear().domain(lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi]).nice()
        .range([HEIGHT - MARGIN.bottom, MARGIN.top]));
    }
  }
  const yOf = (r, d) => {
    const y = ys.get(d.name);
    return d.kind === 'param' ? y(paramLabel(value(r, d))) : y(value(r, d));
  };
  // Lines coloured by the last dimension (a metric, when one is chosen).
  const last = dims[dims.length - 1];
  const yl = ys.get(last.name);
  const color = scaleLinear().domain([HEIGHT - MARGIN.bottom, MARGIN.top]).range(['#1f5fd1', '#d1491f']);
  const path = line();

  const svg = select(c.body).append('svg')
    .attr('xmlns', SVGNS).attr('width', width).attr('height', HEIGHT).attr('class', 'parcoords');
  svg.append('rect').attr('width', width).attr('height', HEIGHT).attr('fill', '#fff');
  const lines = svg.append('g').attr('class', 'pc-lines').attr('fill', 'none')
    .selectAll('path').data(usable).join('path')
    .attr('d', (r) => path(dims.map((d) => [x(d.name), yOf(r, d)])))
    .attr('stroke', (r) => color(yl === undefined ? 0 : yOf(r, last)))
    .attr('stroke-width', 1.4)
    .attr('data-trial', (r) => r.trial_id)
    .style('cursor', 'pointer')
    .on('click', (ev, r) => onPick && onPick(r.trial_id));
  lines.append('title').text((r) => `${r.trial_id}\n` + dims.map((d) => `${d.name} = ${paramLabel(value(r, d))}`).join('\n'));

  const status = document.createElement('p');
  status.className = 'note';
  status.id = 'parcoords-status';
  const summary = { id: 'parcoords', axes: dims.map((d) => d.name), lines: usable.length, selected: 0, brushes: state.brushes };
  const restyle = () => {
    let n = 0;
    lines.each(function style(r) {
      const on = rowPasses(r, state.brushes);
      if (on) n++;
      this.setAttribute('stroke-opacity', on ? 0.85 : 0.08);
      this.setAttribute('class', on ? 'on' : 'off');
    });
    summary.selected = n;
    summary.brushes = { ...state.brushes };
    summary.terms = brushTerms(state.brushes);
    status.textContent = Object.keys(state.brushes).length
      ? `${n} of ${usable.length} trials selected: ${brushTerms(state.brushes)}`
      : `${usable.length} trials` + (matched > rows.length ? ` (the first ${rows.length} of ${matched})` : '');
  };

  const axes = svg.append('g').selectAll('g').data(dims).join('g')
    .attr('class', 'pc-axis').attr('data-axis', (d) => d.name)
    .attr('transform', (d) => `translate(${x(d.name)},0)`);
  axes.each(function drawAxis(d) {
    select(this).call(axisLeft(ys.get(d.name)).ticks(6));
  });
  axes.append('text').attr('y', 14).attr('text-anchor', 'middle').attr('fill', '#1d2330')
    .attr('font-size', 12).attr('font-weight', 600).text((d) => d.name);

  // One vertical brush per axis.
  const brushFor = (d) => brushY()
    .extent([[-12, MARGIN.top - 6], [12, HEIGHT - MARGIN.bottom + 6]])
    .on('brush end', (ev) => {
      const sel = ev.selection;
      // Restoring a saved brush (no user gesture) keeps its exact terms.
      if (!ev.sourceEvent && sel && state.brushes[d.name]) return restyle();
      if (!sel) {
        delete state.brushes[d.name];
      } else if (d.kind === 'param') {
        const y = ys.get(d.name);
        state.brushes[d.name] = { set: y.domain().filter((l) => y(l) >= sel[0] && y(l) <= sel[1]) };
      } else {
        const y = ys.get(d.name);
        state.brushes[d.name] = roundRange(y.invert(sel[1]), y.invert(sel[0]));
      }
      restyle();
      if (ev.type === 'end' && ev.sourceEvent && onBrush) onBrush({ ...state.brushes });
    });
  axes.each(function addBrush(d) {
    const b = brushFor(d);
    const g = select(this).append('g').attr('class', 'pc-brush').call(b);
    const saved = state.brushes[d.name];
    if (!saved) return;
    const y = ys.get(d.name);
    let extent = null;
    if (saved.set) {
      const at = saved.set.map((l) => y(l)).filter((v) => v !== undefined);
      if (at.length) extent = [Math.min(...at) - 6, Math.max(...at) + 6];
    } else {
      extent = [y(saved.hi), y(saved.lo)];
    }
    if (extent) g.call(b.move, extent);
  });

  c.body.appendChild(status);
  restyle();
  window.__smoe.charts.parcoords = summary;
  window.__smoe.renders++;

  c.tool('CSV', () => {
    const header = ['trial', ...dims.map((d) => d.name), 'selected'];
    const out = usable.map((r) => [r.trial_id, ...dims.map((d) => value(r, d)), rowPasses(r, state.brushes) ? 1 : 0]);
    download('parallel-coordinates.csv', new Blob([toCsv(header, out)], { type: 'text/csv' }));
  }, 'csv');
  c.tool('SVG', () => {
    const s = c.body.querySelector('svg').outerHTML;
    download('parallel-coordinates.svg', new Blob([s], { type: 'image/svg+xml' }));
  }, 'svg');
  return { card: c, summary };
}
