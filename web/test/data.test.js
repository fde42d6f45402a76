// Unit tests of web/src/data.js (run: node --test web/test/; ctest web_unit).
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  alignSeries, csvEscape, fmt, metricName, numericXs, seriesFromCurves, theoryAccuracy, toCsv,
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
