// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/asha.h
//
// Asynchronous successive halving (ASHA; Li et al., 2020) over training steps,
// as a pure function of the recorded reports.
//
// Rungs: r_i = min_steps * eta^i for every i with r_i < max_steps (reaching
// max_steps completes a trial). A trial's value at rung r is its first report
// at a step >= r (or, with `smooth` > 1, the mean of the last `smooth`
// reports up to that one). Within a group (the sweep's group_by values), at
// rung i:
//   n_i    = trials of the group with a value at rung i,
//   keep_i = floor(n_i / eta); when the rung is complete (every trial that
//            can reach it has: all of the group at rung 0, all promoted from
//            rung i-1 above) and keep_i = 0 < n_i, keep_i = 1, so every group
//            finishes at least one trial,
//   the top keep_i by value (ties: trial id) are promoted to rung i+1.
// A trial's decision is about its highest rung: promoted -> kPromote, else
// kPrune with the cutoff (the worst promoted value; NaN while keep_i = 0)
// and final = the rung is complete (nothing can displace the promoted).
// A trial below the first rung runs; one at max_steps is complete. An
// errored trial is never pruned for its error: if its metrics do not prune
// it, it is retried (kRetry), and until it reports a rung it holds that
// rung open (not complete), as a running trial does.
//
// Options (AshaConfig): `smooth` (a rung's value is the mean of the last
// evaluations), `aggregate_seeds` (the unit ranked, promoted and pruned is a
// configuration with all its seeds, valued by their mean) and
// `keep_neighbors` (the best unit's integer neighbours on an axis are
// promoted with it). Without them a unit is one trial, as above.
#ifndef SMOE_ANALYSIS_SEARCH_ASHA_H_
#define SMOE_ANALYSIS_SEARCH_ASHA_H_

#include <cstdint>
#include <vector>

#include "analysis/search/types.h"

namespace smoe::analysis::search {

struct AshaConfig {
  Mode mode = Mode::kMax;
  int64_t min_steps = 1;
  int64_t reduction = 3;  // eta >= 2
  int64_t max_steps = 1;
  // A trial's value at a rung: the mean of its last `smooth` reports up to
  // and including its first report at a step >= the rung (1: that report
  // alone). Averages out evaluation noise; the rung step is unchanged.
  int64_t smooth = 1;
  // A complete rung of n trials keeps at least min(min_keep, n) (the rule
  // above is min_keep = 1): a guard so that more than one candidate of a
  // group reaches the next rung. Not a sweep-file key (replay only).
  int64_t min_keep = 1;
  // Rung decisions per configuration (Trial::config) instead of per trial:
  // the seeds of one configuration are one unit, ranked at a rung by the
  // mean of their values there (a unit has a value at a rung when all its
  // seeds have one), and promoted or pruned together. The quantity the
  // search answers for (the best configuration) is defined on the seed
  // mean, so ranking single seeds prunes configurations on seed noise and
  // leaves configurations finished with some of their seeds only. A seed
  // that reaches a rung before the others of its configuration pauses
  // there (a prune that is not final) until they arrive.
  bool aggregate_seeds = false;
  // At every rung, also promote the integer neighbours (Trial::axis +- 1,
  // same Trial::rest) of the rung's best unit, beyond the top keep_i: the
  // search is for the argmax over the axis, and near it neighbouring
  // values differ by less than the noise and the early-rung bias (curves
  // that learn at different speeds). They do not raise keep_i.
  bool keep_neighbors = false;
};

// The rungs' steps: min_steps * eta^i < max_steps, ascending. Empty when
// min_steps >= max_steps. REQUIRES: min_steps >= 1, reduction >= 2.
std::vector<int64_t> AshaRungs(const AshaConfig& config);

// One decision per trial of `trials`, in trial-id order. Reports of trials
// not in `trials` are ignored.
std::vector<Decision> DecideAsha(const AshaConfig& config,
                                 const std::vector<Trial>& trials,
                                 const std::vector<Report>& reports);

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_ASHA_H_
