// Unit tests of web/src/data.js (run: node --test web/test/; ctest web_unit).
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  alignSeries, csvEscape, errorText, exitText, fitMeaningful, fitQuality, fmt, maxSeeds, meanSe, metricName, numericXs,
  optimalUncertainty, seriesFromCurves, sharedRange, skillMixBest, skillMixSeries, sweepDeletion, theoryAccuracy, toCsv,
  xScaleOptions,
  trialMetricGroups,
} from '../src/data.js';

// The curves JSON shape served by /api/sweeps/{id}/curves.
const facet = {
  label: 'hyla',
  series: [
    { label: '1', points: [
      { x: 1, mean: 0.5, sem: 0.1, ci_lo: 0.3, ci_hi: 0.7 },
      { x: 4, mean: 0.9, sem: 0.05, ci_lo: 0.8, ci_hi: 0.95 }] },
    { label: '2', points: [{ x: 2, mean: 0.6, sem: 0.02, ci_lo: 0.55, ci_hi: 0.66 }] },
  ],
};

test('numericXs: union of x values, numbers ascending, extras included', () => {
  assert.deepEqual(numericXs([facet]), [1, 2, 4]);
  assert.deepEqual(numericXs([facet], [8, 2]), [1, 2, 4, 8]);
  assert.deepEqual(numericXs([{ series: [{ points: [{ x: 'b' }, { x: 'a' }] }] }]), ['a', 'b']);
});

test('seriesFromCurves: mean line, band per choice, gaps as null, optimal marker', () => {
  const xs = [1, 2, 4];
  const optimal = [{ facet_label: 'hyla', series_label: '1', best: 4, best_mean: 0.9 }];
  const out = seriesFromCurves(facet, xs, 'ci', optimal, ['#a', '#b']);
  assert.equal(out.length, 3); // series 1, its k* marker, series 2
  assert.deepEqual(out[0].values, [0.5, null, 0.9]);
  assert.deepEqual(out[0].lo, [0.3, null, 0.8]);
  assert.deepEqual(out[0].hi, [0.7, null, 0.95]);
  assert.equal(out[0].color, '#a');
  assert.equal(out[1].markers, true);
  assert.equal(out[1].label, 'k* 1');
  assert.deepEqual(out[1].values, [null, null, 0.9]);
  assert.deepEqual(out[2].values, [null, 0.6, null]);
  assert.equal(out[2].color, '#b');
  const sem = seriesFromCurves(facet, xs, 'sem', [], ['#a']);
  assert.equal(sem.length, 2); // no optimal: no markers
  assert.ok(Math.abs(sem[0].lo[0] - 0.4) < 1e-12);
  assert.ok(Math.abs(sem[0].hi[2] - 0.95) < 1e-12);
  assert.equal(sem[1].color, '#a'); // palette wraps
});

test('seriesFromCurves: no band where a point has one seed (n = 1)', () => {
  const one = { label: 'hyla', series: [{ label: '1', points: [
    { x: 1, n: 1, mean: 0.5, sem: 0, ci_lo: 0.5, ci_hi: 0.5 },
    { x: 2, n: 3, mean: 0.7, sem: 0.1, ci_lo: 0.6, ci_hi: 0.8 }] }] };
  for (const band of ['ci', 'sem']) {
    const [line] = seriesFromCurves(one, [1, 2], band, [], ['#a']);
    assert.deepEqual(line.values, [0.5, 0.7]);
    assert.equal(line.lo[0], null);
    assert.equal(line.hi[0], null);
    assert.ok(Math.abs(line.lo[1] - 0.6) < 1e-12);
  }
  assert.equal(maxSeeds({ facets: [one] }), 3);
  assert.equal(maxSeeds({ facets: [] }), 0);
});

// A large cell (2,000 seeds or more, docs/dashboard.md): the point carries
// seed_count instead of the seeds list; the page reads n, not the list.
test('large cells: points with seed_count and no seeds list draw as before', () => {
  const big = { label: 'hyla', series: [{ label: '1', points: [
    { x: 1, n: 25000, seed_count: 25000, mean: 0.5, sem: 0.001, ci_lo: 0.498, ci_hi: 0.502, ci_method: 'normal' },
    { x: 2, n: 25000, seed_count: 25000, mean: 0.7, sem: 0.001, ci_lo: 0.698, ci_hi: 0.702, ci_method: 'normal' }] }] };
  const [line] = seriesFromCurves(big, [1, 2], 'ci', [], ['#a']);
  assert.deepEqual(line.values, [0.5, 0.7]);
  assert.deepEqual(line.lo, [0.498, 0.698]);
  assert.deepEqual(line.hi, [0.502, 0.702]);
  assert.equal(maxSeeds({ facets: [big] }), 25000);
  const [lo, hi] = sharedRange({ facets: [big] });
  assert.ok(lo < 0.498 && hi > 0.702);
});

test('fitQuality: R² shown, R² < 0 flagged as not meaningful', () => {
  const good = { ok: true, r2: 0.9312 };
  const bad = { ok: true, r2: -552.4 };
  assert.equal(fitQuality(good), 'R² = 0.931');
  assert.equal(fitMeaningful(good), true);
  assert.equal(fitQuality(bad), 'R² = -552.400: not meaningful (worse than a flat line)');
  assert.equal(fitMeaningful(bad), false);
  assert.equal(fitMeaningful({ ok: false, r2: 0 }), false);
  assert.equal(fitMeaningful(undefined), false);
});

test('optimalUncertainty: one seed has no P(best) and no CI, it says n = 1', () => {
  assert.deepEqual(optimalUncertainty({ seeds: 1, best_sem: 0, best_freq: 1, ci_lo: 2, ci_hi: 2 }),
    { sem: '–', p: 'n = 1', ci: 'n = 1' });
  assert.deepEqual(optimalUncertainty({ seeds: 3, best_sem: 0.01, best_freq: 0.6, ci_lo: 2, ci_hi: 4 }),
    { sem: 0.01, p: 0.6, ci: '[2, 4]' });
  // Older servers send no seed count: shown as before.
  assert.equal(optimalUncertainty({ best_sem: 0, best_freq: 1, ci_lo: 2, ci_hi: 2 }).p, 1);
});

test('theoryAccuracy: 1 - E clipped to [0, 1], null where the fit has no k', () => {
  const kStar = { N: 2, curve: [[1, 1.4], [2, 0.25], [4, -0.1], [8, null]] };
  assert.deepEqual(theoryAccuracy(kStar, [1, 2, 3, 4, 8]), [0, 0.75, null, 1, null]);
});

test('alignSeries: union of steps, null where a metric has no point', () => {
  const metrics = {
    'train/loss': { steps: [0, 10, 20], values: [3, 2, 1] },
    'eval/ood_acc': { steps: [10, 30], values: [0.5, 0.7] },
  };
  const { xs, values } = alignSeries(metrics, ['train/loss', 'eval/ood_acc']);
  assert.deepEqual(xs, [0, 10, 20, 30]);
  assert.deepEqual(values[0], [3, 2, 1, null]);
  assert.deepEqual(values[1], [null, 0.5, null, 0.7]);
});

test('csv: quoting, empty for non-finite and missing values', () => {
  assert.equal(csvEscape('a,b'), '"a,b"');
  assert.equal(csvEscape('say "hi"'), '"say ""hi"""');
  assert.equal(csvEscape('two\nlines'), '"two\nlines"');
  assert.equal(csvEscape(NaN), '');
  assert.equal(csvEscape(null), '');
  assert.equal(csvEscape(0), '0');
  assert.equal(toCsv(['k', 'acc'], [[1, 0.5], [2, Infinity]]), 'k,acc\n1,0.5\n2,\n');
});

test('labels and number formatting', () => {
  assert.equal(metricName('ood_acc'), 'OOD accuracy');
  assert.equal(metricName('custom/metric'), 'custom/metric');
  assert.equal(fmt(3), '3');
  assert.equal(fmt(0.123456), '0.1235');
  assert.equal(fmt(0.5, 2), '0.50');
  assert.equal(fmt(null), '');
  assert.equal(fmt('hyla'), 'hyla');
});

// The Skill-Mix table JSON served by /api/sweeps/{id}/skillmix (one metric):
// rows = EPT, cols = k_skills, cells[r][c] = {n, mean, sem} or null.
const cell = (mean, sem, n = 2) => ({ n, mean, sem });
const skillTable = {
  metric: 'ratio_full_marks',
  rows: [1, 2, 4, 8],
  cols: [2, 3],
  cells: [
    [cell(0.2, 0.01), cell(0.1, 0.02)],
    [cell(0.5, 0.03), null], // k=3 has no EPT=2 trial yet
    [cell(0.4, 0.04), cell(0.3, null, 1)], // n = 1, no s.e. reported
    [cell(0.1, 0.01), cell(0.6, 0.02)],
  ],
};

test('skillMixSeries: a line per k_skills over EPT, +- s.e. band, gaps as null', () => {
  const { xs, xTickLabels, categorical, series } = skillMixSeries(skillTable, ['#a', '#b']);
  assert.deepEqual(xs, [1, 2, 4, 8]);
  assert.equal(categorical, false);
  assert.equal(xTickLabels, null);
  assert.deepEqual(series.map((s) => s.label),
    ['k_skills=2', 'best EPT k_skills=2', 'k_skills=3', 'best EPT k_skills=3']);
  const [k2, m2, k3, m3] = series;
  assert.deepEqual(k2.values, [0.2, 0.5, 0.4, 0.1]);
  assert.ok(k2.lo.every((v, i) => Math.abs(v - [0.19, 0.47, 0.36, 0.09][i]) < 1e-12));
  assert.ok(k2.hi.every((v, i) => Math.abs(v - [0.21, 0.53, 0.44, 0.11][i]) < 1e-12));
  assert.equal(k2.color, '#a');
  assert.equal(m2.color, '#a');
  assert.equal(m2.markers, true);
  assert.deepEqual(m2.values, [null, 0.5, null, null]); // k=2: best EPT 2 (interior)
  // Missing cell: no point and no band; n = 1 without s.e.: a point, no band.
  assert.deepEqual(k3.values, [0.1, null, 0.3, 0.6]);
  assert.equal(k3.lo[1], null);
  assert.equal(k3.lo[2], null);
  assert.equal(k3.hi[2], null);
  assert.ok(Math.abs(k3.hi[3] - 0.62) < 1e-12);
  assert.deepEqual(m3.values, [null, null, null, 0.6]);
  assert.equal(k3.color, '#b');
});

test('skillMixBest: argmax of the mean per k_skills with runner-up and gap in s.e.', () => {
  const best = skillMixBest(skillTable);
  assert.equal(best.length, 2);
  assert.equal(best[0].col, 2);
  assert.deepEqual(best[0].best, { row: 2, mean: 0.5, sem: 0.03, n: 2 });
  assert.deepEqual(best[0].runner_up, { row: 4, mean: 0.4, sem: 0.04, n: 2 });
  assert.ok(Math.abs(best[0].gap_se - 0.1 / 0.05) < 1e-12); // sqrt(0.03^2 + 0.04^2) = 0.05
  // k=3: the runner-up is the n = 1 cell with no s.e., so no gap in s.e. units.
  assert.deepEqual(best[1].best, { row: 8, mean: 0.6, sem: 0.02, n: 2 });
  assert.deepEqual(best[1].runner_up, { row: 4, mean: 0.3, sem: null, n: 1 });
  assert.equal(best[1].gap_se, null);
});

test('skillMixBest: NaN / missing s.e. with n = 1 is unknown, not zero', () => {
  const t = { rows: [1, 2], cols: [4], cells: [[cell(0.3, NaN, 1)], [{ n: 1, mean: 0.2 }]] };
  const [b] = skillMixBest(t);
  assert.deepEqual(b.best, { row: 1, mean: 0.3, sem: null, n: 1 });
  assert.deepEqual(b.runner_up, { row: 2, mean: 0.2, sem: null, n: 1 });
  assert.equal(b.gap_se, null);
  const { series } = skillMixSeries(t, ['#a']);
  assert.deepEqual(series[0].lo, [null, null]);
  assert.deepEqual(series[0].hi, [null, null]);
  assert.equal(meanSe(b.best, 2), '0.30 ± ?');
  assert.equal(meanSe(b.runner_up, 3), '0.200 ± ?');
  assert.equal(meanSe(null), '');
  assert.equal(meanSe({ mean: 0.25, sem: 0.05 }, 2), '0.25 ± 0.05');
  // A NaN mean is no value at all.
  const nan = skillMixBest({ rows: [1], cols: [2], cells: [[cell(NaN, 0.1)]] });
  assert.deepEqual(nan, [{ col: 2, best: null, runner_up: null, gap_se: null }]);
});

test('skillMixBest: ties go to the smaller EPT, the tied one is the runner-up', () => {
  // Equal means (up to rounding of a different summation order) at EPT 2 and 8.
  const t = {
    rows: [1, 2, 4, 8],
    cols: [2],
    cells: [[cell(0.1, 0.01)], [cell(0.3, 0.02)], [cell(0.2, 0.01)], [cell(0.1 + 0.2, 0.02)]],
  };
  assert.notEqual(0.1 + 0.2, 0.3);
  const [b] = skillMixBest(t);
  assert.equal(b.best.row, 2);
  assert.equal(b.runner_up.row, 8);
  assert.ok(Math.abs(b.gap_se) < 1e-9);
  const { series } = skillMixSeries(t, ['#a']);
  assert.deepEqual(series[1].values, [null, 0.3, null, null]);
  // A real difference above the tie tolerance wins even when tiny.
  t.cells[3][0] = cell(0.3 + 1e-9, 0.02);
  assert.equal(skillMixBest(t)[0].best.row, 8);
});

test('skillMixSeries: a single k_skills, an empty column, categorical rows', () => {
  const one = { rows: [4], cols: [3], cells: [[cell(0.7, 0.1)]] };
  const s1 = skillMixSeries(one, ['#a', '#b']);
  assert.deepEqual(s1.xs, [4]);
  assert.equal(s1.series.length, 2);
  assert.deepEqual(s1.series[1].values, [0.7]);
  assert.equal(s1.best[0].runner_up, null); // one EPT: nothing to compare with
  assert.equal(s1.best[0].gap_se, null);
  // A column with no finished trials: a line of nulls, no marker, best null.
  const empty = { rows: [1, 2], cols: [2, 5], cells: [[cell(0.1, 0.01), null], [cell(0.2, 0.01), null]] };
  const s2 = skillMixSeries(empty, ['#a', '#b']);
  assert.deepEqual(s2.series.map((s) => s.label), ['k_skills=2', 'best EPT k_skills=2', 'k_skills=5']);
  assert.deepEqual(s2.series[2].values, [null, null]);
  assert.equal(s2.best[1].best, null);
  // Non-numeric rows: index xs with tick labels; a custom column name.
  const cat = { rows: ['a', 'b'], cols: [1], cells: [[cell(0.5, 0.1)], [cell(0.4, 0.1)]] };
  const s3 = skillMixSeries(cat, ['#a'], 'k');
  assert.equal(s3.categorical, true);
  assert.deepEqual(s3.xs, [0, 1]);
  assert.deepEqual(s3.xTickLabels, ['a', 'b']);
  assert.equal(s3.series[0].label, 'k=1');
  assert.deepEqual(s3.series[1].values, [0.5, null]);
  // Rows shorter than rows[] (ragged JSON) read as missing cells.
  const ragged = { rows: [1, 2], cols: [2], cells: [[cell(0.1, 0.01)]] };
  assert.deepEqual(skillMixSeries(ragged, ['#a']).series[0].values, [0.1, null]);
});

test('errorText / exitText: the last error line and the last exit code', () => {
  assert.equal(errorText({ error: '', exit_code: 3 }), '');
  assert.equal(exitText({ error: '', exit_code: 0 }), '');
  assert.equal(errorText({ error: 'no CUDA-capable device', exit_code: 70 }), 'no CUDA-capable device');
  assert.equal(exitText({ error: 'no CUDA-capable device', exit_code: 70 }), '70');
  // A retry that then succeeded keeps the error; its exit code is the retry's.
  assert.equal(exitText({ error: 'worker lost', exit_code: 0 }), '0');
  assert.equal(exitText({ error: 'worker lost', exit_code: null }), '');
  const t = errorText({ error: 'x'.repeat(300), exit_code: 1 });
  assert.equal(t.length, 120);
  assert.ok(t.endsWith('…'));
});

test('sweepDeletion: refused with the reason while trials are live, else a confirm naming the count', () => {
  const running = sweepDeletion({ sweep_id: 'demo', counts: { pending: 2, running: 1, succeeded: 5, total: 8 } });
  assert.equal(running.allowed, false);
  assert.equal(running.live, 3);
  assert.equal(running.reason, '3 trials are pending or running: cancel the sweep first, then delete it');
  assert.equal(running.confirm, '');
  assert.equal(sweepDeletion({ sweep_id: 'd', counts: { running: 1 } }).reason,
    '1 trial is pending or running: cancel the sweep first, then delete it');
  const done = sweepDeletion({ sweep_id: 'demo', counts: { succeeded: 5, failed: 1, cancelled: 2, total: 8 } });
  assert.equal(done.allowed, true);
  assert.equal(done.reason, '');
  assert.equal(done.confirm,
    'Delete sweep demo and its 8 trials with all their metrics, results, logs and checkpoints? This cannot be undone.');
  // Without a total (older server), the states are summed; one trial is singular.
  assert.match(sweepDeletion({ sweep_id: 'x', counts: { pruned: 1 } }).confirm, /its 1 trial with/);
  assert.match(sweepDeletion({ sweep_id: 'x', counts: {} }).confirm, /its 0 trials/);
});

// Issue 31 item 8: the log2 x axis was a time scale (uPlot's default), so the
// hover legend showed "top_k: 1970-01-01 12:00am".
test('xScaleOptions: never a time scale; log2 and ranges kept', () => {
  assert.deepEqual(xScaleOptions(true), { time: false, distr: 3, log: 2 });
  assert.deepEqual(xScaleOptions(false), { time: false });
  assert.deepEqual(xScaleOptions(true, [0.5, 16]), { time: false, distr: 3, log: 2, range: [0.5, 16] });
});

// Issue 31 item 1: train/lr has a chart (and so a y axis) of its own; it used
// to share "Other metrics" with step-sized counters and read as a flat zero.
test('trialMetricGroups gives the learning rate its own chart', () => {
  const g = trialMetricGroups(['train/loss', 'train/lr', 'eval/ood_acc', 'train/tokens', 'sys/rss_mb',
    'router/layer0/entropy', 'checkpoint/uploaded']);
  assert.deepEqual(g.lr, ['train/lr']);
  assert.deepEqual(g.loss, ['train/loss']);
  assert.deepEqual(g.eval, ['eval/ood_acc']);
  assert.deepEqual(g.other, ['train/tokens', 'checkpoint/uploaded']);
  assert.ok(!g.other.includes('train/lr'));
});
