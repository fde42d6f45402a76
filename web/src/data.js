// Pure data shaping for the dashboard (no DOM): API JSON -> chart series,
// CSV, labels. Unit-tested with node:test (web/test/data.test.js).

export const METRIC_NAMES = {
  ood_acc: 'OOD accuracy',
  test_acc: 'test accuracy',
  ratio_full_marks: 'Ratio of Full Marks',
  ratio_all_skills: 'Ratio of All Skills',
  skill_fraction: 'Skill Fraction',
};
export const metricName = (m) => METRIC_NAMES[m] || m;

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
      lo: pick((p) => (band === 'sem' ? p.mean - p.sem : p.ci_lo)),
      hi: pick((p) => (band === 'sem' ? p.mean + p.sem : p.ci_hi)),
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

export function toCsv(header, rows) {
  return [header, ...rows].map((r) => r.map(csvEscape).join(',')).join('\n') + '\n';
}
