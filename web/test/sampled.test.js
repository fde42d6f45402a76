// Unit tests of the dashboard's sampled-axis scales (web/src/data.js
// xAxisScale, xScaleFlags, xScaleOptions; docs/sampled-axes.md).
import assert from 'node:assert/strict';
import test from 'node:test';

import { xAxisScale, xScaleFlags, xScaleOptions } from '../src/data.js';

// GET /api/sweeps/{id}'s axes: grid axes, then sampled ones.
const axes = [
  { name: 'top_k', values: [1, 2, 4, 8] },
  { name: 'lr', values: [0.0005, 0.002, 0.01], sampled: { distribution: 'loguniform', range: [0.0003, 0.03] }, log: true },
  { name: 'weight_decay', values: [0.01, 0.1], sampled: { distribution: 'uniform', range: [0, 0.2] }, log: false },
  { name: 'warmup', values: [60, 300], sampled: { distribution: 'int', range: [50, 500] }, log: false },
];

test('xAxisScale: a log-uniform sampled axis is log10, other sampled axes linear', () => {
  assert.equal(xAxisScale(axes, 'lr', [0.0005, 0.002, 0.01]), 'log10');
  // Declared linear: linear even though every value is positive.
  assert.equal(xAxisScale(axes, 'weight_decay', [0.01, 0.1]), 'linear');
  assert.equal(xAxisScale(axes, 'warmup', [60, 300]), 'linear');
});

test('xAxisScale: grid axes keep log2 for positive numbers; the log toggle and non-positive xs win', () => {
  assert.equal(xAxisScale(axes, 'top_k', [1, 2, 4, 8]), 'log2');
  assert.equal(xAxisScale(axes, 'M', [1, 2]), 'log2');
  assert.equal(xAxisScale(axes, 'top_k', [0, 1, 2]), 'linear');
  assert.equal(xAxisScale(axes, 'lr', [0.001], false), 'linear');
  assert.equal(xAxisScale(axes, 'top_k', [1, 2], false), 'linear');
  assert.equal(xAxisScale(axes, 'attention', ['hyla', 'softmax']), 'linear');
  assert.equal(xAxisScale(axes, 'lr', []), 'linear');
  assert.equal(xAxisScale(undefined, 'lr', [0.001, 0.01]), 'log2');
});

test('xScaleFlags and xScaleOptions: log10 becomes a base-10 log scale', () => {
  assert.deepEqual(xScaleFlags('log10'), { xLog2: false, xLog10: true });
  assert.deepEqual(xScaleFlags('log2'), { xLog2: true, xLog10: false });
  assert.deepEqual(xScaleFlags('linear'), { xLog2: false, xLog10: false });
  assert.deepEqual(xScaleOptions(true, null, 10), { time: false, distr: 3, log: 10 });
  assert.deepEqual(xScaleOptions(true, [1, 2]), { time: false, distr: 3, log: 2, range: [1, 2] });
  assert.deepEqual(xScaleOptions(false, null, 10), { time: false });
});
