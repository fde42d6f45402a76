// Copyright 2026 SMoE Lab authors.
//
// File: analysis/curve_aggregator.h
//
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
#ifndef SMOE_ANALYSIS_CURVE_AGGREGATOR_H_
#define SMOE_ANALYSIS_CURVE_AGGREGATOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/optimal_k.h"
#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

class CurveAggregator {
 public:
  explicit CurveAggregator(AggregateOptions options);
  ~CurveAggregator();
  CurveAggregator(const CurveAggregator&) = delete;
  CurveAggregator& operator=(const CurveAggregator&) = delete;

  const AggregateOptions& options() const;
  // Sets the trial at `position` (its place in the sweep's trial order, as in
  // the vector the from-scratch functions take) to `trial`, replacing what
  // that position held. REQUIRES: position >= 0; memory grows with the
  // largest position (positions are row indices, dense).
  void Set(int64_t position, const TrialPoint& trial);
  // The same from the trial's parts: its params, seed, state and the value of
  // options().metric (null: none), without building a TrialPoint.
  // REQUIRES: position < 2^32.
  void Set(int64_t position, const nlohmann::json& params, int64_t seed,
           store::TrialState state, const double* value);
  // Returns AggregateCurves(trials, options()).
  const Curves& curves();
  // Returns ComputeOptimalK(curves()).
  const std::vector<OptimalK>& optimal();
  // Returns AnalyzeSweep(trials, options()).
  nlohmann::json Analysis();
  // ToJson(curves()) and Analysis() with the members of `extra` (an object
  // of other keys) added, serialised as the coordinator's DumpJson does
  // (compact, invalid UTF-8 replaced) - byte for byte - from per-cell
  // fragments serialised when a cell is recomputed: a body costs O(cells)
  // plus copying its bytes, not a JSON tree of every seed of every cell.
  std::string CurvesBody(const nlohmann::json& extra);
  std::string AnalysisBody(const nlohmann::json& extra);
  // Cells recomputed so far (bootstraps run); for tests and benchmarks.
  int64_t cells_computed() const;
  // An estimate of the memory it holds (per trial its entry and index
  // nodes, per cell its seeds and values, in the cells and in curves(), and
  // its serialised fragment): what a cache of aggregators bounds
  // (coordinator/views/sweep_read_model.h).
  size_t ApproxBytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_CURVE_AGGREGATOR_H_
