// Unit tests of the workers page's pure parts in web/src/data.js (run: node --test web/test/).
import assert from 'node:assert/strict';
import test from 'node:test';

import { fmtAge, workersSummary } from '../src/data.js';

test('fmtAge writes seconds, minutes and hours as the CLI does', () => {
  assert.equal(fmtAge(0), '0s');
  assert.equal(fmtAge(59.9), '59s');
  assert.equal(fmtAge(95), '1m35s');
  assert.equal(fmtAge(3600 + 120 + 5), '1h02m');
  assert.equal(fmtAge(-3), '0s');
});

test('workersSummary counts states and the slots in use on live workers only', () => {
  const w = (state, slotsUsed, slots) => ({ state, slots_used: slotsUsed, slots });
  assert.equal(workersSummary({ workers: [w('ready', 1, 4), w('draining', 2, 2), w('lost', 3, 8), w('stopped', 0, 1)], hidden: 0 }),
    '4 workers: 1 ready, 1 draining, 1 stopped, 1 lost; 3/6 slots in use');
  assert.equal(workersSummary({ workers: [w('paused', 1, 2), w('ready', 0, 2)], hidden: 0 }),
    '2 workers: 1 ready, 1 paused, 0 draining, 0 stopped, 0 lost; 1/4 slots in use');
  assert.equal(workersSummary({ workers: [w('ready', 0, 1)], hidden: 2 }),
    '1 worker: 1 ready, 0 draining, 0 stopped, 0 lost; 0/1 slots in use; 2 silent for more than a day not shown');
});
