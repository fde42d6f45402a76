// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/median_stop.h
//
// The median stopping rule (Golovin et al. 2017, Google Vizier; Katib's
// medianstop, Optuna's MedianPruner), as a pure function of the reports.
//
// A trial t is pruned at the first of its report steps s with
// min_steps <= s < max_steps where its best value up to s is strictly worse
// than the median of the running averages (mean of the values at steps
// <= s) of the other trials of its group that have reported at a step >= s,
// when there are at least kMinOthers (3, Katib's default) of them. Every
// other trial in the group counts, finished or not: that makes the decision
// a function of the recorded reports, whatever their arrival order.
//
// Prunes are final (monotone; Katib's and Optuna's semantics): a trial that
// is paused (Trial::paused, i.e. the coordinator applied a prune) stays
// pruned whatever the median does later. Without this a paused trial could
// flip pruned <-> pending each time slower trials moved the median across
// its value. The decision is a function of the records and of which trials
// are paused, both durable, so it is still recomputable after a restart.
// Errored trials are retried unless their metrics prune them.
#ifndef SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_H_
#define SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/search/types.h"

namespace smoe::analysis::search {

struct MedianConfig {
  Mode mode = Mode::kMax;
  int64_t min_steps = 0;
  int64_t max_steps = 1;
  static constexpr int kMinOthers = 3;
};

// One decision per trial of `trials`, in trial-id order.
std::vector<Decision> DecideMedian(const MedianConfig& config,
                                   const std::vector<Trial>& trials,
                                   const std::vector<Report>& reports);

// One trial's curve as the rule reads it: its reports' steps ascending, the
// best value up to each and the running average up to each.
struct MedianCurve {
  std::vector<int64_t> steps;
  std::vector<double> best;
  std::vector<double> running;
  int64_t progress() const { return steps.empty() ? -1 : steps.back(); }
  // The running average at step s (of the values at steps <= s); false when
  // the trial has no value at a step <= s.
  bool RunningAt(int64_t s, double* out) const;
};

// Appends one report (step above every step of `curve`) to `curve`.
void ExtendMedianCurve(Mode mode, const Report& r, MedianCurve* curve);

// The curve of one trial from its reports (only its own; any order,
// duplicates resolved as Canonical does).
MedianCurve MedianCurveOf(Mode mode, std::vector<Report> reports);

// DecideMedian's decision about `trial` (curve `curve`) given, for each step
// s of the curve with min_steps <= s < max_steps, `sorted_at(s)`: the running
// averages at s, sorted ascending, of the trials of its group that have a
// value at a step <= s and reported at a step >= s (its own included). The
// building block of DecideMedian and of IncrementalMedian
// (median_incremental.h), so both give the same decision byte for byte.
Decision DecideMedianTrial(
    const MedianConfig& config, const Trial& trial, const MedianCurve& curve,
    const std::function<const std::vector<double>&(int64_t)>& sorted_at);

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_H_
