// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/analysis.h
//
// Sweep analysis, plain C++ (no HTTP, no gRPC): used by the dashboard's HTTP
// API (coordinator/http_server.*) and by `smoe analyze`.
//
//  * AggregateCurves: a result metric grouped by three trial parameters
//    (x, series, facet), aggregated over seeds: n, mean, s.e.m. (sd with
//    ddof = 1 over sqrt(n); 0 when n = 1) and a percentile bootstrap CI of the
//    mean. The paper's Figure 1 is x = top_k, series = M, facet = attention.
//  * OptimalK: per (facet, series), the x maximising the mean (minimising for
//    loss/error metrics), a paired seed bootstrap of that argmax (how often
//    each x wins, and a percentile CI of the winning x), and the
//    smallest-x-within-one-s.e. rule (smallest x whose mean is within one
//    s.e.m. of the best mean; a sparsity-preferring choice).
//  * FitTotalError: the total error of Zhao et al. (arXiv 2410.13964, 4.3)
//        E(k, N) = a * N^2 / k + b * sqrt(N * k / m * log(T / k)),
//    fitted by non-negative least squares in (a, b) to measured error
//    e = 1 - accuracy, per facet, over every (series, x) cell. Mapping to
//    SRAVEN trial params: k = top_k, N = M (task complexity: rules composed),
//    T = num_experts, m = steps * batch_size (training problems seen). The
//    router-complexity factor d_N is absorbed into b. Returns residuals, R^2
//    and the predicted k* = argmin_k E(k, N) over integer k in [1, T] and
//    over the measured k values.
//  * SkillMixTables: EPT x k_skills tables of every result metric, mean +- s.e.
//    over seeds (a trial's own `<metric>_se` is used when there is one seed).
//
// Parameter values missing from a trial's params take the kind's defaults
// (sraven: M 4, top_k 2, num_experts 8, attention softmax, steps 156250,
// batch_size 128 - the trainer's defaults).
//
// Determinism: bootstrap draws come from smoe::Rng streams addressed by
// (options.seed, a hash of the cell's labels), so results are identical on
// every platform and independent of the order of the input trials.
//
// Thread safety: every function is pure.
#ifndef SMOE_COORDINATOR_ANALYSIS_H_
#define SMOE_COORDINATOR_ANALYSIS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "store/types.h"

namespace smoe::coordinator::analysis {

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
};

struct CellStats {
  int n = 0;
  double mean = 0;
  double sem = 0;    // 0 when n < 2
  double ci_lo = 0;  // percentile bootstrap CI of the mean (= mean when n = 1)
  double ci_hi = 0;
  double min = 0;
  double max = 0;
};

struct CurvePoint {
  GroupKey x;
  CellStats stats;
  std::vector<int64_t> seeds;  // seeds with a value, ascending
  std::vector<double> values;  // value per seed (same order)
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

// Percentile (linear interpolation between order statistics, numpy's
// default) of `sorted`. REQUIRES: sorted non-empty, ascending, q in [0, 1].
double Quantile(const std::vector<double>& sorted, double q);

// ---- optimal k --------------------------------------------------------------

struct OptimalK {
  GroupKey facet;
  GroupKey series;
  bool maximize = true;
  GroupKey best;  // argmax (argmin) of the mean
  double best_mean = 0;
  double best_sem = 0;
  GroupKey one_se;  // smallest x within one s.e.m. of the best mean
  // Bootstrap of the argmax over seeds (paired: one resample of the seed list
  // is applied to every x).
  int bootstrap_samples = 0;
  double best_freq = 0;  // fraction of replicates whose argmax is `best`
  double ci_lo = 0;      // percentile CI of the argmax x (numeric x only)
  double ci_hi = 0;
  std::map<std::string, double> argmax_freq;  // x label -> fraction
};

// True for metrics where larger is better (everything except names containing
// "loss" or "error").
bool IsMaximized(const std::string& metric);

// One OptimalK per (facet, series) of `curves`, in the curves' order.
std::vector<OptimalK> ComputeOptimalK(const Curves& curves);

// ---- theory fit
// ---------------------------------------------------------------

struct FitPoint {
  double k = 0, n = 0, t = 0,
         m = 0;         // top_k, M, num_experts, training problems
  double measured = 0;  // mean error (1 - accuracy)
  double predicted = 0;
  double residual = 0;  // measured - predicted
  int seeds = 0;
};

struct TheoryFit {
  GroupKey facet;
  bool ok = false;  // false: too few usable points (see `message`)
  std::string message;
  double a = 0, b = 0;  // E = a*N^2/k + b*sqrt(N*k/m*log(T/k)); a, b >= 0
  double rss = 0;
  double r2 = 0;  // 1 - rss / total sum of squares (0 when undefined)
  std::vector<FitPoint> points;
  // Per N (series value): the predicted optimal k.
  struct KStar {
    double n = 0;
    double t = 0, m = 0;
    int k_star = 0;          // argmin over integer k in [1, T]
    double k_star_grid = 0;  // argmin over the measured k values
    std::vector<std::pair<double, double>> curve;  // (k, E) for k = 1..T
  };
  std::vector<KStar> k_star;
};

// The model's value. REQUIRES: 0 < k <= t, n > 0, m > 0.
double TotalError(double a, double b, double k, double n, double t, double m);

// Fits per facet. `curves` must aggregate an accuracy-like metric with
// x = the number of active experts and series = the task complexity; every
// trial of a cell must share num_experts, steps and batch_size (a cell's
// first trial's values are used; `trials` supplies them).
std::vector<TheoryFit> FitTotalError(const Curves& curves,
                                     const std::vector<TrialPoint>& trials);

// Non-negative least squares y ~ a*f1 + b*f2 (a, b >= 0), closed form over the
// active sets. Returns {a, b}.
std::pair<double, double> Nnls2(const std::vector<double>& f1,
                                const std::vector<double>& f2,
                                const std::vector<double>& y);

// ---- Skill-Mix tables
// ----------------------------------------------------------

struct SkillMixTable {
  std::string metric;
  std::vector<GroupKey> rows;  // ept values
  std::vector<GroupKey> cols;  // k_skills values
  // cells[r][c]; n = 0 when empty.
  std::vector<std::vector<CellStats>> cells;
};

// One table per result metric present (metrics ending in "_se" are used as
// the s.e. of their base metric, not tabled). Rows = `row_param` (default
// "ept"), columns = `col_param` (default "k_skills").
std::vector<SkillMixTable> SkillMixTables(
    const std::vector<TrialPoint>& trials, const std::string& row_param = "ept",
    const std::string& col_param = "k_skills");

// The best row (EPT) of one column (k_skills) of a Skill-Mix table: argmax
// of the cell means (ties -> the smaller row, rows being sorted), and the
// runner-up, so a reader sees whether the gap is within the s.e.
struct SkillMixBest {
  size_t col = 0;
  int best = -1;       // row index; -1 when the column has no cell
  int runner_up = -1;  // row index; -1 when the column has one cell
};
std::vector<SkillMixBest> BestRowPerColumn(const SkillMixTable& table);

// Human-readable Skill-Mix tables for `smoe analyze` of a skillmix sweep:
// per metric (all, or only `metric` when not empty) the rows x cols grid of
// "mean +- s.e." and the best row per column with its runner-up.
std::string FormatSkillMixTables(const std::vector<SkillMixTable>& tables,
                                 const std::string& row_param,
                                 const std::string& col_param,
                                 const std::string& metric = "");

// ---- JSON
// -----------------------------------------------------------------------

nlohmann::json ToJson(const GroupKey& k);
nlohmann::json ToJson(const Curves& c);
nlohmann::json ToJson(const OptimalK& o);
nlohmann::json ToJson(const TheoryFit& f);
nlohmann::json ToJson(const SkillMixTable& t);

// The analysis the dashboard and `smoe analyze` show: curves of `metric`
// (x = top_k, series = M, facet = attention), optimal k per cell, and the
// theory fit (skipped with a message when the metric is not an accuracy).
nlohmann::json AnalyzeSweep(const std::vector<TrialPoint>& trials,
                            const AggregateOptions& options);

// ---- incremental aggregation
// ---------------------------------------------------

// Keeps the results of AggregateCurves, ComputeOptimalK and AnalyzeSweep for
// one AggregateOptions up to date while trials change, recomputing only the
// cells (and the series' optimal k) whose trials changed: a live sweep of
// 100,000 trials pays for the cells a completion touched, not for the sweep.
// Results are exactly those of the from-scratch functions over the current
// trials in position order (bootstrap streams are addressed by cell labels).
//
// Usage: Set() every trial once, then Set() the changed ones; read curves(),
// optimal() or Analysis() whenever needed.
//
// Thread safety: not thread-safe; callers serialise access.
class CurveAggregator {
 public:
  explicit CurveAggregator(AggregateOptions options);
  ~CurveAggregator();
  CurveAggregator(const CurveAggregator&) = delete;
  CurveAggregator& operator=(const CurveAggregator&) = delete;

  const AggregateOptions& options() const;
  // Sets the trial at `position` (its place in the sweep's trial order, as in
  // the vector the from-scratch functions take) to `trial`, replacing what
  // that position held.
  void Set(int64_t position, const TrialPoint& trial);
  // Returns AggregateCurves(trials, options()).
  const Curves& curves();
  // Returns ComputeOptimalK(curves()).
  const std::vector<OptimalK>& optimal();
  // Returns AnalyzeSweep(trials, options()).
  nlohmann::json Analysis();
  // Cells recomputed so far (bootstraps run); for tests and benchmarks.
  int64_t cells_computed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Human-readable table of AnalyzeSweep's result (for `smoe analyze`).
std::string FormatAnalysisTable(const nlohmann::json& analysis);

}  // namespace smoe::coordinator::analysis

#endif  // SMOE_COORDINATOR_ANALYSIS_H_
