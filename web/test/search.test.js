// Unit tests of web/src/search.js's pure parts (run: node --test web/test/).
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  deviceHoursText, frontierBudgetNote, frontierState, prunedOverlay, rungLines, trialDecisionPoints, usageText,
} from '../src/search.js';

test('usageText states used against the full grid with the ratio', () => {
  assert.equal(usageText({ trial_steps_used: 80, full_grid_trial_steps: 160 }),
    '80 / 160 trial-steps used / full-grid estimate (50%; 2.0× fewer than the full grid)');
  assert.equal(usageText({ trial_steps_used: 0, full_grid_trial_steps: 160 }),
    '0 / 160 trial-steps used / full-grid estimate (0%;)');
  assert.equal(usageText({ trial_steps_used: 12, full_grid_trial_steps: 0 }), '12 trial-steps');
});

test('deviceHoursText states the hours used and the full-grid estimate', () => {
  assert.equal(deviceHoursText({ device: 'GPU', device_hours_used: 0.52, device_hours_full_grid_estimate: 2.08 }),
    '0.52 GPU-hours used / 2.1 full-grid estimate');
  assert.equal(deviceHoursText({ device: 'slot', device_hours_used: 12.34, device_hours_full_grid_estimate: null }),
    '12.3 slot-hours used / – full-grid estimate');
  assert.equal(deviceHoursText({}), '');
  assert.equal(deviceHoursText({ device: 'GPU', device_hours_used: 0.5, device_hours_full_grid_estimate: 2, budget_gpu_hours: 40 }),
    '0.50 GPU-hours used / 2.0 full-grid estimate · budget 40.0');
  assert.equal(deviceHoursText({ device: 'slot', device_hours_used: 0.5, device_hours_full_grid_estimate: 2, budget_gpu_hours: 0.45 }),
    '0.50 slot-hours used / 2.0 full-grid estimate · budget 0.45 (spent)');
});

const search = {
  adaptive: true, metric: 'ood_acc', rungs: [10, 30, 90],
  pruned_points: [
    { trial_id: 's/a', params: { top_k: 2, M: 1, attention: 'softmax' }, step: 10, value: 0.3, final: true },
    { trial_id: 's/b', params: { top_k: 8, M: 1, attention: 'hyla' }, step: 30, value: 0.4, final: false },
    { trial_id: 's/c', params: { top_k: 4, M: 2, attention: 'softmax' }, step: 10, value: null, final: true },
  ],
  decisions: [
    { trial_id: 's/a', action: 'prune', step: 10, value: 0.3, final: false },
    { trial_id: 's/a', action: 'promote', step: 10, value: 0.3, final: false },
    { trial_id: 's/b', action: 'prune', step: 30, value: 0.4, final: true },
    { trial_id: '', action: 'resolved', step: 4, value: 0.9, final: true },
  ],
};

test('prunedOverlay draws the pruned trials of the facet at their stop value', () => {
  assert.deepEqual(prunedOverlay(search, { metric: 'eval/ood_acc', xKey: 'top_k', facetKey: 'attention', facetLabel: 'softmax' }),
    [{ x: 2, y: 0.3, label: 'pruned at step 10' }]);
  assert.deepEqual(prunedOverlay(search, { metric: 'ood_acc', xKey: 'top_k', facetKey: '', facetLabel: '' }).map((p) => p.x), [2, 8]);
  // Categorical x: through the index map; other metrics: nothing.
  assert.deepEqual(prunedOverlay(search, { metric: 'ood_acc', xKey: 'attention', facetKey: '', xIndex: new Map([['hyla', 1]]) }),
    [{ x: 1, y: 0.4, label: 'pruned at step 30 (may resume)' }]);
  assert.deepEqual(prunedOverlay(search, { metric: 'test_acc', xKey: 'top_k' }), []);
  assert.deepEqual(prunedOverlay({ adaptive: false }, { metric: 'ood_acc', xKey: 'top_k' }), []);
});

test('rungLines and trialDecisionPoints mark the rungs and a trial\'s decisions', () => {
  assert.deepEqual(rungLines(search), [{ x: 10, label: 'rung 0' }, { x: 30, label: 'rung 1' }, { x: 90, label: 'rung 2' }]);
  assert.deepEqual(rungLines(null), []);
  assert.deepEqual(trialDecisionPoints(search, 's/a').map((p) => [p.x, p.y, p.label]),
    [[10, 0.3, 'prune'], [10, 0.3, 'promote']]);
  assert.deepEqual(trialDecisionPoints(search, 's/b').map((p) => p.label), ['prune (final)']);
});

test('frontierState shows groups the GPU-hour budget settled as budget', () => {
  const hours = 'top_k*=5: x*=5 (mean 0.8): adding its untried neighbours; budget_gpu_hours 40 spent: 40.2 GPU-hours used (attempts\' wall time x 1 GPU): x*=5 not resolved';
  // The recomputed state (no budget applied) says exploring; the log says budget.
  assert.deepEqual(frontierState({ state: 'exploring', settled: 'budget', settled_reason: hours, reason: 'x*=5' }),
    { state: 'budget', label: 'budget (GPU-hours)', why: 'GPU-hours', title: hours });
  assert.deepEqual(frontierState({ state: 'budget', reason: 'x*=2 (mean 0.9): adding seed 3; budget 40 trials spent: x*=2 not resolved' }).label,
    'budget (trials)');
  // Resolved after the budget (its pending points finished): resolved.
  assert.equal(frontierState({ state: 'resolved', settled: 'resolved', reason: 'x*=4 resolved' }).state, 'resolved');
  assert.deepEqual(frontierState({ state: 'exploring', reason: 'x*=3' }),
    { state: 'exploring', label: 'exploring', why: '', title: 'x*=3' });
});

test('frontierBudgetNote counts the groups settled by each budget', () => {
  const s = {
    frontier: [
      { state: 'exploring', settled: 'budget', settled_reason: 'x; budget_gpu_hours 2 spent: 2.1 slot-hours used' },
      { state: 'budget', reason: 'y; budget_gpu_hours 2 spent: 2.1 slot-hours used' },
      { state: 'budget', reason: 'z; budget 12 trials spent: x*=1 not resolved' },
      { state: 'resolved', settled: 'resolved' },
    ],
  };
  assert.equal(frontierBudgetNote(s),
    '2 of 4 groups settled by the GPU-hour budget; 1 of 4 groups settled by the trial budget (x* not resolved)');
  assert.equal(frontierBudgetNote({ frontier: [{ state: 'resolved' }] }), '');
  assert.equal(frontierBudgetNote(null), '');
});
