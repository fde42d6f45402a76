// Chart cards: a uPlot chart (lines, seed bands, optimal-k markers) with CSV
// and PNG export. Every chart registers a summary in window.__smoe.charts so
// the browser tests can check what was drawn.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { toCsv, xScaleOptions } from './data.js';

export const PALETTE = [
  '#1f5fd1', '#d1491f', '#1d9a5b', '#8a3fd1', '#c79a00', '#00a3b4', '#d12f8a',
  '#5b6473',
];

window.__smoe = window.__smoe || { charts: {}, renders: 0 };

function rgba(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}

export function download(name, blob) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => {
    URL.revokeObjectURL(a.href);
    a.remove();
  }, 1000);
}

function slug(s) {
  return String(s).replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^_+|_+$/g, '');
}

// A card with a title, export buttons and a body.
export function card(parent, title, { id, note } = {}) {
  const el = document.createElement('section');
  el.className = 'card';
  if (id) el.dataset.chart = id;
  el.innerHTML = `<div class="card-head"><h3></h3><span class="tools"></span></div>
    <div class="card-body"></div>${note ? '<p class="note"></p>' : ''}`;
  el.querySelector('h3').textContent = title;
  if (note) el.querySelector('.note').textContent = note;
  parent.appendChild(el);
  return {
    el,
    body: el.querySelector('.card-body'),
    tool(label, fn, cls) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.className = 'tool ' + (cls || '');
      b.addEventListener('click', fn);
      el.querySelector('.tools').appendChild(b);
      return b;
    },
  };
}

// Draws a line chart.
//   spec.xs: ascending numbers; spec.series: [{label, color, values, lo, hi,
//   dash, markers (values drawn as big dots only), width, bandGaps (the band
//   stops where lo/hi are null instead of bridging the gap), scatter (values
//   drawn as small dots: individual trials; legend: false hides its legend
//   row)}]
//   spec.xLog2 (ticks at the xs), spec.xLog10 (a sampled log axis: ticks at
//   decades), spec.yLog10 (a base-10 log y scale: chosen learning rates),
//   spec.xLabel, spec.yLabel, spec.yRange [lo, hi],
//   spec.xTickLabels (for categorical x: index -> label)
//   spec.overlay: [{x, y, label}] extra points drawn as hollow grey circles
//     (adaptive sweeps: trials stopped early, at the value they stopped at)
//   spec.vlines: [{x, label}] dashed vertical markers (ASHA rung steps)
export function lineChart(parent, id, title, spec, note) {
  const c = card(parent, title, { id, note });
  const data = [spec.xs];
  const series = [{ label: spec.xLabel || 'x' }];
  const bands = [];
  const hidden = [];
  const summary = { id, title, series: [], markers: [],
    xScale: spec.xLog10 ? 'log10' : spec.xLog2 ? 'log2' : 'linear',
    yScale: spec.yLog10 ? 'log10' : 'linear',
    overlay: (spec.overlay || []).map((p) => ({ x: p.x, y: p.y, label: p.label })),
    vlines: (spec.vlines || []).map((v) => v.x) };
  for (const s of spec.series) {
    if (s.lo && s.hi) {
      data.push(s.hi);
      series.push({ label: s.label + ' hi', stroke: 'transparent', width: 0,
        points: { show: false }, spanGaps: !s.bandGaps });
      const hiIdx = series.length - 1;
      hidden.push(hiIdx);
      data.push(s.lo);
      series.push({ label: s.label + ' lo', stroke: 'transparent', width: 0,
        points: { show: false }, spanGaps: !s.bandGaps });
      const loIdx = series.length - 1;
      hidden.push(loIdx);
      bands.push({ series: [hiIdx, loIdx], fill: rgba(s.color, 0.16) });
    }
    data.push(s.values);
    if (s.scatter) {
      // Individual trials: small translucent dots, no line.
      series.push({
        label: s.label, stroke: s.color, width: 0, paths: () => null,
        points: { show: true, size: 5, width: 1, fill: rgba(s.color, 0.45), stroke: s.color },
      });
      if (!s.legend) hidden.push(series.length - 1);
      summary.scatter = (summary.scatter || 0) +
        s.values.filter((v) => v !== null && v !== undefined).length;
    } else if (s.markers) {
      series.push({
        label: s.label, stroke: s.color, width: 0, paths: () => null,
        points: { show: true, size: 13, width: 2, fill: s.color, stroke: '#111' },
      });
      spec.xs.forEach((x, i) => {
        if (s.values[i] !== null && s.values[i] !== undefined) {
          summary.markers.push({ series: s.label, x, y: s.values[i] });
        }
      });
    } else {
      series.push({
        label: s.label, stroke: s.color, width: s.width || 2, dash: s.dash,
        spanGaps: true, points: { show: !s.dash, size: 6, fill: s.color },
      });
      summary.series.push({
        label: s.label,
        points: s.values.filter((v) => v !== null && v !== undefined).length,
        overlay: !!s.dash,
        values: s.values,
      });
    }
  }
  // Overlay points lie outside the series' range (values at a rung, before
  // the end): widen the y scale to show them.
  let yRange = spec.yRange;
  if (!yRange && (spec.overlay || []).length) {
    const ys = [...spec.series.flatMap((x) => [...x.values, ...(x.lo || []), ...(x.hi || [])]),
      ...spec.overlay.map((p) => p.y)].filter((v) => v !== null && v !== undefined && Number.isFinite(v));
    if (ys.length) {
      const lo = Math.min(...ys), hi = Math.max(...ys);
      const pad = Math.max(1e-6, 0.05 * (hi - lo));
      yRange = [lo - pad, hi + pad];
    }
  }
  // Overlay points may also lie at an x no series has (a k where every trial
  // was stopped early): widen the x scale to show them too.
  let xRange;
  const overlayXs = (spec.overlay || []).map((p) => p.x).filter((v) => Number.isFinite(v));
  if (overlayXs.length) {
    const xsAll = [...spec.xs, ...overlayXs].filter((v) => Number.isFinite(v));
    const lo = Math.min(...xsAll), hi = Math.max(...xsAll);
    if (lo < Math.min(...spec.xs) || hi > Math.max(...spec.xs) || !spec.xs.length) {
      // A little room so the edge circles are not cut in half.
      if (spec.xLog2 || spec.xLog10) {
        const f = lo === hi ? 2 : 2 ** (0.04 * Math.log2(hi / lo));
        xRange = [lo / f, hi * f];
      } else {
        const pad = lo === hi ? 0.5 : 0.04 * (hi - lo);
        xRange = [lo - pad, hi + pad];
      }
    }
  }
  const width = Math.max(320, Math.min(c.body.clientWidth || 560, 760));
  const xTicks = spec.xTickLabels;
  const opts = {
    width,
    height: spec.height || 300,
    series,
    bands,
    scales: {
      x: xScaleOptions(spec.xLog2 || spec.xLog10, xRange, spec.xLog10 ? 10 : 2),
      y: { ...(spec.yLog10 ? { distr: 3, log: 10 } : {}), ...(yRange ? { range: yRange } : {}) },
    },
    axes: [
      {
        label: spec.xLabel,
        values: xTicks
          ? (u, vals) => vals.map((v) => xTicks[v] ?? '')
          // (uPlot's log10 splits may hold nulls: no label there.)
          : (u, vals) => vals.map((v) => (v === null || v === undefined ? '' : String(+v.toPrecision(6)))),
        splits: spec.xLog2 || xTicks
          ? () => (xRange ? [...new Set([...spec.xs, ...overlayXs])].sort((a, b) => a - b) : spec.xs)
          : undefined,
      },
      spec.yLog10
        // (log splits may hold nulls, as on x.)
        ? { label: spec.yLabel, size: 64, values: (u, vals) => vals.map((v) => (v === null || v === undefined ? '' : String(+v.toPrecision(6)))) }
        : { label: spec.yLabel, size: 56 },
    ],
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    hooks: {
      draw: [(u) => {
        summary.xRange = [u.scales.x.min, u.scales.x.max];  // as drawn
        drawExtras(u, spec);
      }],
    },
  };
  const u = new uPlot(opts, data, c.body);
  // Band edges are plumbing: no legend rows for them.
  const rows = u.root.querySelectorAll('.u-legend .u-series');
  hidden.forEach((i) => rows[i] && (rows[i].style.display = 'none'));
  window.__smoe.charts[id] = summary;
  window.__smoe.renders++;

  c.tool('CSV', () => {
    const header = series.map((s) => s.label);
    const rowsOut = spec.xs.map((x, i) => [
      xTicks ? xTicks[x] : x, ...data.slice(1).map((d) => d[i]),
    ]);
    download(slug(title) + '.csv', new Blob([toCsv(header, rowsOut)], { type: 'text/csv' }));
  }, 'csv');
  c.tool('PNG', () => chartPng(u, title, spec.series.filter((s) => !s.scatter || s.legend)).then((b) => download(slug(title) + '.png', b)), 'png');
  return { u, card: c, summary };
}

// Overlay points and vertical markers, on top of the series.
function drawExtras(u, spec) {
  const ctx = u.ctx;
  const dpr = window.devicePixelRatio || 1;
  const { left, top, width, height } = u.bbox;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  for (const v of spec.vlines || []) {
    const px = u.valToPos(v.x, 'x', true);
    if (!Number.isFinite(px)) continue;
    ctx.strokeStyle = '#888';
    ctx.lineWidth = dpr;
    ctx.setLineDash([4 * dpr, 4 * dpr]);
    ctx.beginPath();
    ctx.moveTo(px, top);
    ctx.lineTo(px, top + height);
    ctx.stroke();
    ctx.setLineDash([]);
    if (v.label) {
      ctx.fillStyle = '#666';
      ctx.font = `${10 * dpr}px sans-serif`;
      ctx.fillText(v.label, px + 3 * dpr, top + 12 * dpr);
    }
  }
  for (const p of spec.overlay || []) {
    const px = u.valToPos(p.x, 'x', true);
    const py = u.valToPos(p.y, 'y', true);
    if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
    ctx.strokeStyle = p.color || '#9a9a9a';
    ctx.fillStyle = 'rgba(160, 160, 160, 0.25)';
    ctx.lineWidth = 1.5 * dpr;
    ctx.beginPath();
    ctx.arc(px, py, 4.5 * dpr, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
  }
  ctx.restore();
}

// The chart's canvas with a title and a legend, as a PNG blob.
export function chartPng(u, title, legend) {
  const src = u.ctx.canvas;
  const px = src.width / u.width || 1;
  const pad = 12 * px;
  const titleH = 26 * px;
  const legendH = 22 * px;
  const out = document.createElement('canvas');
  out.width = src.width + 2 * pad;
  out.height = src.height + titleH + legendH + 2 * pad;
  const g = out.getContext('2d');
  g.fillStyle = '#fff';
  g.fillRect(0, 0, out.width, out.height);
  g.fillStyle = '#1d2330';
  g.font = `${15 * px}px system-ui, sans-serif`;
  g.fillText(title, pad, pad + 16 * px);
  g.drawImage(src, pad, pad + titleH);
  let x = pad;
  const y = pad + titleH + src.height + 15 * px;
  g.font = `${12 * px}px system-ui, sans-serif`;
  for (const s of legend) {
    g.fillStyle = s.color;
    g.fillRect(x, y - 9 * px, 14 * px, 4 * px);
    g.fillStyle = '#1d2330';
    g.fillText(s.label, x + 18 * px, y - 3 * px);
    x += (26 + 7 * s.label.length) * px;
  }
  return new Promise((resolve) => out.toBlob(resolve, 'image/png'));
}

// A heatmap table (Skill-Mix EPT x k_skills) with CSV and PNG export.
export function heatTable(parent, id, title, t, note) {
  const c = card(parent, title, { id, note });
  const vals = t.cells.flat().filter(Boolean).map((x) => x.mean);
  const lo = Math.min(...vals, 0);
  const hi = Math.max(...vals, 1e-9);
  const color = (v) => {
    const f = hi > lo ? (v - lo) / (hi - lo) : 0;
    return `hsl(${215 - 170 * f}, 70%, ${92 - 40 * f}%)`;
  };
  // An unknown s.e. (one trial that reported none: null) reads as "?", not 0.
  const fmt = (cell) => (cell ? `${cell.mean.toFixed(2)} ± ${cell.sem === null || cell.sem === undefined ? '?' : cell.sem.toFixed(3)}` : '–');
  const table = document.createElement('table');
  table.className = 'heat';
  let html = `<thead><tr><th>${t.rowName} \\ ${t.colName}</th>`;
  for (const col of t.cols) html += `<th>${col}</th>`;
  html += '</tr></thead><tbody>';
  t.rows.forEach((r, i) => {
    html += `<tr><th>${r}</th>`;
    t.cols.forEach((_, j) => {
      const cell = t.cells[i][j];
      const style = cell ? ` style="background:${color(cell.mean)}"` : '';
      html += `<td${style} data-n="${cell ? cell.n : 0}">${fmt(cell)}</td>`;
    });
    html += '</tr>';
  });
  table.innerHTML = html + '</tbody>';
  c.body.appendChild(table);
  window.__smoe.charts[id] = {
    id, title, rows: t.rows.length, cols: t.cols.length,
    cells: t.cells.flat().filter(Boolean).length,
  };
  window.__smoe.renders++;
  c.tool('CSV', () => {
    const header = [t.rowName, t.colName, 'mean', 'se', 'n'];
    const rows = [];
    t.rows.forEach((r, i) => t.cols.forEach((col, j) => {
      const cell = t.cells[i][j];
      if (cell) rows.push([r, col, cell.mean, cell.sem, cell.n]);
    }));
    download(slug(title) + '.csv', new Blob([toCsv(header, rows)], { type: 'text/csv' }));
  }, 'csv');
  c.tool('PNG', () => {
    const cw = 120, ch = 30, px = window.devicePixelRatio || 1;
    const out = document.createElement('canvas');
    out.width = (t.cols.length + 1) * cw * px + 24 * px;
    out.height = ((t.rows.length + 1) * ch + 40) * px;
    const g = out.getContext('2d');
    g.scale(px, px);
    g.fillStyle = '#fff';
    g.fillRect(0, 0, out.width, out.height);
    g.fillStyle = '#1d2330';
    g.font = '14px system-ui, sans-serif';
    g.fillText(title, 12, 20);
    g.font = '12px system-ui, sans-serif';
    const y0 = 32;
    g.fillText(`${t.rowName} \\ ${t.colName}`, 16, y0 + 19);
    t.cols.forEach((col, j) => g.fillText(String(col), 12 + (j + 1) * cw + 6, y0 + 19));
    t.rows.forEach((r, i) => {
      const y = y0 + (i + 1) * ch;
      g.fillStyle = '#1d2330';
      g.fillText(String(r), 16, y + 19);
      t.cols.forEach((_, j) => {
        const cell = t.cells[i][j];
        const x = 12 + (j + 1) * cw;
        if (cell) {
          g.fillStyle = color(cell.mean);
          g.fillRect(x, y, cw - 2, ch - 2);
        }
        g.fillStyle = '#1d2330';
        g.fillText(fmt(cell), x + 6, y + 19);
      });
    });
    out.toBlob((b) => download(slug(title) + '.png', b), 'image/png');
  }, 'png');
  return c;
}
