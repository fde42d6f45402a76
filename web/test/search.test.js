// Unit tests of web/src/search.js's pure parts (run: node --test web/test/).
import assert from 'node:assert/strict';
import test from 'node:test';

import { usageText } from '../src/search.js';

test('usageText states used against the full grid with the ratio', () => {
  assert.equal(usageText({ trial_steps_used: 80, full_grid_trial_steps: 160 }),
    '80 / 160 trial-steps used / full-grid estimate (50%; 2.0× fewer than the full grid)');
  assert.equal(usageText({ trial_steps_used: 0, full_grid_trial_steps: 160 }),
    '0 / 160 trial-steps used / full-grid estimate (0%;)');
  assert.equal(usageText({ trial_steps_used: 12, full_grid_trial_steps: 0 }), '12 trial-steps');
});
