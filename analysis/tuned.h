// Copyright 2026 SMoE Lab authors.
//
// File: analysis/tuned.h
//
// The tuned analysis of issue 33: the optimal x (k) per (facet, series) when
// every x gets its own tuned hyperparameters. `tune` names parameters the
// sweep varies (lr, weight_decay, ...); a *configuration* is one combination
// of their values. For every (facet, series, x) and seed, the configuration
// with the best `select_by` metric (val_acc: the validation split, which the
// reported metric never saw) is selected, and the analysis metric (test_acc,
// ood_acc) is reported there.
//
// Selection unit:
//  * kSeed (default): each seed picks its own configuration. A seed is one
//    independent replicate of the experiment (its data stream,
//    initialisation and validation problems), so this is "each replicate
//    tunes, then reports".
//  * kPoint: one configuration per (facet, series, x), the one with the best
//    mean of `select_by` over the seeds; the metric is averaged over the
//    seeds at that configuration.
//
// Uncertainty includes the selection: the paired bootstrap over seeds (one
// resample of the seed list for every x of a series, as in optimal_k.h)
// redoes the selection inside every resample, from the raw (seed,
// configuration) values, and only then averages and takes the argmax over x.
// Under kPoint the chosen configuration changes between resamples when the
// validation split cannot tell configurations apart; under kSeed every
// resampled seed carries its own choice, so a noisy choice shows up as
// spread between seeds. Either way a selection that flips widens the CI of
// the optimal x and of each point's mean (tuned_test.cc checks both).
//
// The untuned comparison: since the tuned parameters are ordinary grid axes,
// "untuned" means each fixed configuration on its own: the usual curves and
// optimal x of the trials at that configuration (AggregateCurves +
// ComputeOptimalK), one per configuration.
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_TUNED_H_
#define SMOE_ANALYSIS_TUNED_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/optimal_k.h"
#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

enum class SelectUnit { kSeed, kPoint };

// "seed" or "point"; anything else: InvalidArgument naming the value.
absl::StatusOr<SelectUnit> ParseSelectUnit(const std::string& name);
const char* SelectUnitName(SelectUnit u);

struct TuneOptions {
  std::vector<std::string> tune;  // tuned parameters; non-empty
  std::string select_by = "val_acc";
  SelectUnit unit = SelectUnit::kSeed;
};

struct TunedPoint {
  GroupKey x;
  // The metric at the selected configuration(s) over seeds: n, mean, s.e.m.
  // (over the per-seed values) and a bootstrap CI of the mean that re-selects
  // in every resample.
  CellStats stats;
  std::vector<int64_t> seeds;         // seeds with a selected value, ascending
  std::vector<double> values;         // metric at the selection, per seed
  std::vector<double> select_values;  // select_by there, per seed
  std::vector<std::string> chosen;    // configuration label, per seed
  std::map<std::string, int> chosen_count;  // label -> seeds choosing it
  int configs = 0;  // configurations with a value at this x (any seed)
};

struct TunedSeries {
  GroupKey facet;
  GroupKey series;
  std::vector<TunedPoint> points;  // by x
  // The optimal x of the tuned curve; its bootstrap re-selects per resample.
  OptimalK optimal;
};

// The sweep at one fixed configuration.
struct UntunedCurve {
  std::string label;  // "lr=0.001, weight_decay=0.1"
  nlohmann::json values = nlohmann::json::object();  // {"lr": 0.001, ...}
  Curves curves;
  std::vector<OptimalK> optimal;
};

struct TunedAnalysis {
  AggregateOptions options;
  TuneOptions tune;
  std::vector<std::string> configs;   // every configuration's label, sorted
  std::vector<TunedSeries> series;    // by (facet, series)
  std::vector<UntunedCurve> untuned;  // one per configuration, same order
  int trials_used = 0;  // trials with both the metric and select_by
  int trials_total = 0;
};

// The label of `t`'s configuration: "name=value" for each tuned parameter in
// `tune` order, joined by ", " (defaults fill parameters a trial leaves out).
std::string ConfigLabel(const TrialPoint& t,
                        const std::vector<std::string>& tune,
                        const nlohmann::json& defaults);

// Runs the tuned analysis. Trials count when succeeded (unless
// options.succeeded_only is false) and both options.metric and
// tune.select_by are finite. Errors (InvalidArgument): an empty `tune` or
// select_by, a tuned parameter that is also the x, series or facet axis, and
// two trials in the same (facet, series, x, seed, configuration): they
// differ in a parameter that is neither tuned nor an axis, and the message
// names it.
absl::StatusOr<TunedAnalysis> AnalyzeTuned(
    const std::vector<TrialPoint>& trials, const AggregateOptions& options,
    const TuneOptions& tune);

nlohmann::json ToJson(const TunedAnalysis& a);

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_TUNED_H_
