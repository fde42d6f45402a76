// Unit tests of the tuned view's charts (issue 33; web/src/data.js
// tunedCurveSeries, tunedChoiceSeries, tunedValueScale).
import assert from 'node:assert/strict';
import test from 'node:test';

import { tunedChoiceSeries, tunedCurveSeries, tunedValueScale } from '../src/data.js';

const palette = ['#a', '#b', '#c'];

// GET .../analysis/tuned for x top_k, series M, facet attention, tune lr.
function point(x, mean, chosen, ci = [mean - 0.1, mean + 0.1], n = 2) {
  return { x, x_label: String(x), n, mean, ci_lo: ci[0], ci_hi: ci[1], chosen_count: chosen };
}
const curve = (label, pts) => ({ label, points: pts.map(([x, mean]) => ({ x, mean })) });
const tuned = {
  x: 'top_k', series: 'M', facet: 'attention', metric: 'test_acc', tune: ['lr'],
  select_by: 'val_acc', select_per: 'seed', ci_level: 0.95,
  tuned: [
    { facet_label: 'hyla', series_label: '1', points: [
      point(1, 0.8, { 'lr=0.01': 2 }), point(2, 0.9, { 'lr=0.001': 1, 'lr=0.01': 1 }, [0.85, 0.95])] },
    { facet_label: 'hyla', series_label: '2', points: [point(1, 0.5, { 'lr=0.001': 2 }, [null, null], 1)] },
    { facet_label: 'softmax', series_label: '1', points: [point(1, 0.7, { 'lr=0.01': 2 })] },
  ],
  untuned: [
    { config: 'lr=0.001', values: { lr: 0.001 }, curves: { facets: [
      { label: 'hyla', series: [curve('1', [[1, 0.6], [2, 0.9]]), curve('2', [[1, 0.5]])] }] } },
    { config: 'lr=0.01', values: { lr: 0.01 }, curves: { facets: [
      { label: 'hyla', series: [curve('1', [[1, 0.8], [2, 0.7]])] },
      { label: 'softmax', series: [curve('1', [[1, 0.7]])] }] } },
  ],
};

test('tunedCurveSeries: a tuned line with its CI per series, a dashed line per fixed configuration', () => {
  const s = tunedCurveSeries(tuned, 'hyla', [1, 2], palette);
  assert.deepEqual(s.map((x) => x.label), [
    'M=1, tuned', 'M=1, lr=0.001', 'M=1, lr=0.01', 'M=2, tuned', 'M=2, lr=0.001']);
  assert.deepEqual(s[0].values, [0.8, 0.9]);
  assert.deepEqual(s[0].lo, [0.8 - 0.1, 0.85]);
  assert.deepEqual(s[0].hi, [0.8 + 0.1, 0.95]);
  assert.deepEqual(s[1].values, [0.6, 0.9]);
  assert.deepEqual(s[2].values, [0.8, 0.7]);
  assert.ok(s[1].dash && !s[0].dash);
  assert.equal(s[1].color, s[0].color);
  assert.equal(s[3].color, '#b');
  // One seed: no band (not a zero-width one); a missing x is null.
  assert.deepEqual(s[3].lo, [null, null]);
  assert.deepEqual(s[3].values, [0.5, null]);
  assert.deepEqual(tunedCurveSeries(tuned, 'softmax', [1], palette).map((x) => x.label),
    ['M=1, tuned', 'M=1, lr=0.01']);
});

test('tunedChoiceSeries: the value most seeds chose per x, every choice as dots where seeds differ', () => {
  const s = tunedChoiceSeries(tuned, 'hyla', 'lr', [1, 2], palette);
  // M=1: top_k 1 chose 0.01 (2 seeds); top_k 2 split 1:1 -> the smaller value.
  assert.equal(s[0].label, 'M=1');
  assert.deepEqual(s[0].values, [0.01, 0.001]);
  const dots = s.filter((x) => x.scatter && x.label.startsWith('M=1'));
  assert.equal(dots.length, 2);
  assert.deepEqual(dots.map((d) => d.values), [[0.01, 0.001], [null, 0.01]]);
  assert.ok(dots.every((d) => d.legend === false && d.color === '#a'));
  // M=2: one choice per x: no dots.
  const m2 = s.filter((x) => x.label.startsWith('M=2'));
  assert.deepEqual(m2.map((x) => [x.label, x.values, !!x.scatter]), [['M=2', [0.001, null], false]]);
});

test('tunedChoiceSeries: a label the untuned list lacks or a non-numeric value is left out', () => {
  const t = { ...tuned, untuned: [{ config: 'lr=0.01', values: { lr: 'x' } }] };
  const s = tunedChoiceSeries(t, 'hyla', 'lr', [1, 2], palette);
  assert.deepEqual(s[0].values, [null, null]);
});

test('tunedValueScale: log10 for log-declared sampled axes and decade-spanning grid axes', () => {
  const axes = [
    { name: 'lr', values: [0.001, 0.01] },
    { name: 's', values: [0.001], sampled: { distribution: 'loguniform' }, log: true },
    { name: 'wd', values: [0.01, 0.2], sampled: { distribution: 'uniform' }, log: false },
  ];
  assert.equal(tunedValueScale(axes, 'lr', [0.001, 0.01]), 'log10');
  assert.equal(tunedValueScale(axes, 'lr', [0.002, 0.01]), 'linear');  // less than 10x
  assert.equal(tunedValueScale(axes, 's', [0.001, 0.0012]), 'log10');  // declared log
  assert.equal(tunedValueScale(axes, 'wd', [0.01, 0.2]), 'linear');  // declared linear
  assert.equal(tunedValueScale(axes, 'lr', [0, 0.01]), 'linear');
  assert.equal(tunedValueScale(axes, 'lr', []), 'linear');
  assert.equal(tunedValueScale(axes, 'attention', ['hyla']), 'linear');
});
