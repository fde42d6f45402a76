// Copyright 2026 SMoE Lab authors.
//
// File: analysis/stats.h
//
// Sweep statistics, plain C++ (no HTTP, no gRPC, no coordinator): the
// dashboard's HTTP API (coordinator/http/http_server.*) and `smoe analyze`
// (cli/analyze_cmd.*) both use this library.
//
//  * AggregateCurves: a result metric grouped by three trial parameters
//    (x, series, facet), aggregated over seeds: n, mean, s.e.m. (sd with
//    ddof = 1 over sqrt(n); 0 when n = 1) and a percentile bootstrap CI of the
//    mean. The paper's Figure 1 is x = top_k, series = M, facet = attention.
//
// Large cells (issue 35): a cell of n >= normal_ci_min_seeds seeds (default
// kNormalCiMinSeeds = 2,000) gets the bootstrap's normal limit instead of
// the resampling, mean +- z * sd / sqrt(n) (sd with ddof = 0, the
// bootstrap's plug-in variance; z the normal quantile of the level), O(n)
// instead of O(n x resamples); its JSON point says "ci_method": "normal"
// (absent: the percentile bootstrap). At 2,000 seeds the two agree within
// the bootstrap's own Monte Carlo error (stats_test:
// NormalLimitAgreesWithTheBootstrapAtTheThreshold). Such a point's JSON
// carries "seed_count" (the number of seeds) instead of the "seeds" list
// (at 10^6 trials the lists were ~7 MB of every curves and analysis body);
// smaller cells keep the list, byte for byte.
//
// The rest of the library builds on these types: analysis/optimal_k.h (the
// best x per series), analysis/theory_fit.h (the E(k, N) fit),
// analysis/skillmix_tables.h (EPT x k_skills tables), analysis/analyze.h (the
// JSON the dashboard and `smoe analyze` show) and analysis/curve_aggregator.h
// (the same, kept up to date incrementally).
//
// Parameter values missing from a trial's params take the kind's defaults,
// read from the trial parameter table (trials/params.h; sraven: M 4, top_k 2,
// num_experts 8, attention softmax, steps 156250, batch_size 128).
//
// Determinism: bootstrap draws come from smoe::Rng streams addressed by
// (options.seed, a hash of the cell's labels), so results are identical on
// every platform and independent of the order of the input trials.
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_STATS_H_
#define SMOE_ANALYSIS_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "store/types.h"

namespace smoe::analysis {

// One trial as the analysis sees it.
struct TrialPoint {
  std::string trial_id;
  nlohmann::json params = nlohmann::json::object();  // resolved params
  int64_t seed = 0;
  store::TrialState state = store::TrialState::kPending;
  std::map<std::string, double> results;
};

// Converts store summaries (parses params_json; a bad one becomes {}).
std::vector<TrialPoint> FromSummaries(
    const std::vector<store::TrialSummary>& rows);

// The defaults of `kind`'s trial params, from its table in trials/ ({} for
// an unknown kind).
const nlohmann::json& KindDefaults(const std::string& kind);

// A grouping value: a parameter's value as a label, and as a number when it
// is one (numbers sort numerically, strings lexically).
struct GroupKey {
  std::string label;  // "" when the grouping parameter is not used
  double number = 0;
  bool numeric = false;
  bool operator<(const GroupKey& o) const;
  bool operator==(const GroupKey& o) const { return label == o.label; }
};

// AggregateOptions::normal_ci_min_seeds' default.
constexpr int kNormalCiMinSeeds = 2000;

struct AggregateOptions {
  std::string metric = "ood_acc";
  std::string x = "top_k";
  std::string series = "M";
  std::string facet = "attention";  // "" = one facet
  std::string kind = "sraven";      // for parameter defaults
  int bootstrap_samples = 1000;     // 0 disables the bootstrap
  double ci_level = 0.95;
  uint64_t seed = 0;
  // Only succeeded trials are used unless this is false (then any trial with
  // the metric counts).
  bool succeeded_only = true;
  // Cells (and, in optimal_k.h, series whose every point has) at least this
  // many seeds use the bootstrap's normal limit instead of resampling
  // (above). A huge value keeps the bootstrap for every size.
  int normal_ci_min_seeds = kNormalCiMinSeeds;
  // The parameter defaults when not the built-in kind's (kind command: the
  // ones the sweep file declares); null: KindDefaults(kind).
  nlohmann::json defaults;
};

// options.defaults when it is an object, else KindDefaults(options.kind).
const nlohmann::json& ParamDefaults(const AggregateOptions& options);

struct CellStats {
  int n = 0;
  double mean = 0;
  double sem = 0;    // 0 when n < 2
  double ci_lo = 0;  // percentile bootstrap CI of the mean (= mean when n = 1)
  double ci_hi = 0;
  double min = 0;
  double max = 0;
  bool normal_ci = false;  // the CI is the normal limit (n large), not
                           // the percentile bootstrap
};

struct CurvePoint {
  GroupKey x;
  CellStats stats;
  std::vector<int64_t> seeds;  // seeds with a value, ascending
  std::vector<double> values;  // value per seed (same order)
  // The cell has options.normal_ci_min_seeds seeds or more (> 0): ToJson
  // writes "seed_count": seeds.size() instead of the "seeds" list.
  bool seed_count_only = false;
};

struct Series {
  GroupKey key;
  std::vector<CurvePoint> points;  // by x
};

struct Facet {
  GroupKey key;
  std::vector<Series> series;  // by series key
};

struct Curves {
  AggregateOptions options;
  std::vector<Facet> facets;  // by facet key
  int trials_used = 0;        // trials that contributed a value
  int trials_total = 0;
};

// Groups and aggregates. Never fails: trials without the metric are skipped.
Curves AggregateCurves(const std::vector<TrialPoint>& trials,
                       const AggregateOptions& options);

// Summary statistics of `values` (no bootstrap).
CellStats Summarize(const std::vector<double>& values);

// The standard normal quantile: Phi^-1(p), p in (0, 1) (Acklam's rational
// approximation refined by one Halley step on erfc; |error| < 1e-12).
double NormalQuantile(double p);

// Percentile (linear interpolation between order statistics, numpy's
// default) of `sorted`. REQUIRES: sorted non-empty, ascending, q in [0, 1].
double Quantile(const std::vector<double>& sorted, double q);

// `v` as a label: an integer without a decimal point, otherwise "%g".
std::string NumberLabel(double v);

nlohmann::json ToJson(const GroupKey& k);
nlohmann::json ToJson(const Curves& c);
// One point of ToJson(Curves)'s facets[].series[].points[].
nlohmann::json ToJson(const CurvePoint& p);

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_STATS_H_
