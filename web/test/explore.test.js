// Unit tests of the exploration helpers in web/src/data.js (issue 18 item 3):
// default views per sweep kind, trials as dots, parallel-coordinates brushes
// as trials-table filter terms, the shared y range of the compare view.
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  axisLabels, brushTerms, companionMetrics, defaultView, hasTheory, paramLabel, plottableMetrics, pointSeries, roundRange, rowPasses,
  selectBy, sharedRange, tableQuery, theoryApplies, viewLayout,
} from '../src/data.js';

test('defaultView: the kind\'s view (SRAVEN: the paper view); a sweep without one plots its own axes and first metric', () => {
  const paper = { x: 'top_k', series: 'M', facet: 'attention', metric: 'ood_acc', headline_metrics: ['ood_acc', 'test_acc'] };
  assert.deepEqual(defaultView({ kind: 'sraven', view: paper, axes: [{ name: 'M' }, { name: 'top_k' }] }, ['ood_acc']),
    { x: 'top_k', series: 'M', facet: 'attention', metric: 'ood_acc' });
  // A view without a metric (skillmix's table axes) takes the first result.
  assert.deepEqual(defaultView({ kind: 'skillmix', view: { x: 'ept', series: 'k_skills', facet: '', metric: '' } }, ['score_se', 'score']),
    { x: 'ept', series: 'k_skills', facet: '', metric: 'score' });
  assert.deepEqual(defaultView({ kind: 'command', axes: [{ name: 'lr' }, { name: 'width' }] },
    ['loss_per_feature', 'loss', 'loss_se', 'acc']),
  { x: 'lr', series: 'width', facet: '', metric: 'loss' });
  assert.deepEqual(defaultView({ kind: 'command', axes: [] }, []), { x: '', series: '', facet: '', metric: '' });
});

test('plottableMetrics drops per-feature vectors and the s.e. that come with a metric', () => {
  assert.deepEqual(plottableMetrics(['a', 'a_se', 'b_se', 'c_per_feature']), ['a', 'b_se']);
});

test('paramLabel matches the server labels', () => {
  assert.equal(paramLabel(2), '2');
  assert.equal(paramLabel(0.25), '0.25');
  assert.equal(paramLabel('hyla'), 'hyla');
  assert.equal(paramLabel(true), 'true');
});

test('pointSeries: a point per trial, replicates in their own series, grouped and faceted', () => {
  const rows = [
    { params: { top_k: 1, M: 1, attention: 'hyla' }, results: { acc: 0.5 } },
    { params: { top_k: 1, M: 1, attention: 'hyla' }, results: { acc: 0.7 } },
    { params: { top_k: 2, M: 1, attention: 'hyla' }, results: { acc: 0.6 } },
    { params: { top_k: 2, M: 2, attention: 'hyla' }, results: { acc: 0.4 } },
    { params: { top_k: 2, M: 2, attention: 'softmax' }, results: { acc: 0.9 } },
    { params: { top_k: 4, M: 2, attention: 'hyla' }, results: { acc: null } },
  ];
  const out = pointSeries(rows, {
    x: 'top_k', series: 'M', facet: 'attention', facetLabel: 'hyla', metric: 'acc',
    xs: [1, 2, 4], groups: ['1', '2'], palette: ['#a', '#b', '#z'],
  });
  assert.deepEqual(out.map((s) => [s.label, s.color, s.legend, s.values]), [
    ['M=1 trials', '#a', true, [0.5, 0.6, null]],
    ['M=1 trials #2', '#a', false, [0.7, null, null]],
    ['M=2 trials', '#b', true, [null, 0.4, null]],
  ]);
  assert.ok(out.every((s) => s.scatter));
  // No series parameter: one group.
  const one = pointSeries(rows.slice(0, 3), { x: 'top_k', series: '', facet: '', metric: 'acc', xs: [1, 2], groups: [''], palette: ['#a'] });
  assert.equal(one.length, 2);
  assert.equal(one[0].label, ' trials');
});

test('brushTerms / rowPasses: ranges and value sets, the same rule as the server', () => {
  const brushes = { top_k: { set: ['2', '4'] }, ood_acc: { lo: 0.5, hi: 0.9 } };
  assert.equal(brushTerms(brushes), 'top_k=2|4 ood_acc>=0.5 ood_acc<=0.9');
  assert.equal(brushTerms({}), '');
  assert.equal(brushTerms({ M: { set: [] } }), 'M=\u2205');
  const row = (k, acc) => ({ params: { top_k: k }, results: { ood_acc: acc } });
  assert.ok(rowPasses(row(2, 0.5), brushes));
  assert.ok(rowPasses(row(4, 0.9), brushes));
  assert.ok(!rowPasses(row(1, 0.7), brushes));
  assert.ok(!rowPasses(row(2, 0.95), brushes));
  assert.ok(!rowPasses({ params: { top_k: 2 }, results: {} }, brushes));
  assert.ok(rowPasses(row(1, 0.1), {}));
  assert.equal(tableQuery('hyla', brushes), 'hyla top_k=2|4 ood_acc>=0.5 ood_acc<=0.9');
  assert.equal(tableQuery('', {}), '');
});

test('roundRange rounds outward to 4 significant digits', () => {
  assert.deepEqual(roundRange(0.812345, 0.912345), { lo: 0.8123, hi: 0.9124 });
  assert.deepEqual(roundRange(0.9, 0.1), { lo: 0.1, hi: 0.9 });
  assert.deepEqual(roundRange(-1.23456, 0), { lo: -1.235, hi: 0 });
  const r = roundRange(123456, 234567);
  assert.ok(r.lo <= 123456 && r.hi >= 234567);
});

test('sharedRange spans both sweeps (means and band edges) with a margin', () => {
  const curves = (pts) => ({ facets: [{ series: [{ points: pts }] }] });
  const r = sharedRange(curves([{ mean: 0.5, sem: 0.1, ci_lo: 0.3, ci_hi: 0.6 }]), curves([{ mean: 0.9, sem: 0, ci_lo: 0.9, ci_hi: 0.95 }]));
  assert.ok(Math.abs(r[0] - (0.3 - 0.0325)) < 1e-12 && Math.abs(r[1] - (0.95 + 0.0325)) < 1e-12, String(r));
  assert.equal(sharedRange({ facets: [] }), null);
});

test('axisLabels: grid values plus the values trials have, numbers in order (refine adds k between the grid values)', () => {
  assert.deepEqual(axisLabels([1, 2, 4, 8], [2, 3, 4, 5, 3]), ['1', '2', '3', '4', '5', '8']);
  assert.deepEqual(axisLabels(['softmax', 'hyla'], ['hyla', 'linear']), ['softmax', 'hyla', 'linear']);
  assert.deepEqual(axisLabels([], [0.1, 0.01]), ['0.01', '0.1']);
  assert.deepEqual(axisLabels(undefined, [undefined, 2]), ['2']);
});

test('the kind view beyond axes: layout, theory axes, companion metrics, tuned selection', () => {
  const sraven = {
    kind: 'sraven',
    view: {
      x: 'top_k', series: 'M', facet: 'attention', metric: 'ood_acc', headline_metrics: ['ood_acc', 'test_acc'],
      layout: 'curves', theory: { x: 'top_k', series: 'M' }, select_by: 'val_acc',
    },
  };
  const skillmix = { kind: 'skillmix', view: { x: 'ept', series: 'k_skills', facet: '', metric: '', headline_metrics: [], layout: 'tables', theory: null, select_by: '' } };
  const command = { kind: 'command', view: null };
  assert.equal(viewLayout(sraven), 'curves');
  assert.equal(viewLayout(skillmix), 'tables');
  assert.equal(viewLayout(command), 'curves');
  assert.equal(hasTheory(sraven), true);
  assert.equal(hasTheory(skillmix), false);
  assert.equal(hasTheory(command), false);
  assert.equal(theoryApplies(sraven, { x: 'top_k', series: 'M' }), true);
  assert.equal(theoryApplies(sraven, { x: 'M', series: 'top_k' }), false);
  assert.equal(theoryApplies(command, { x: 'top_k', series: 'M' }), false);
  assert.deepEqual(companionMetrics(sraven, { metric: 'ood_acc' }), ['test_acc']);
  assert.deepEqual(companionMetrics(sraven, { metric: 'test_acc' }), []);
  assert.deepEqual(companionMetrics(command, { metric: 'loss' }), []);
  assert.equal(selectBy(sraven), 'val_acc');
  assert.equal(selectBy(skillmix), '');
  assert.equal(selectBy(command), '');
});
