// Copyright 2026 SMoE Lab authors.
//
// File: analysis/cells.h
//
// Internal to analysis/: how a trial maps to its (facet, series, x) cell and
// how one cell is aggregated. Shared by the from-scratch functions and the
// incremental CurveAggregator so both compute exactly the same numbers.
#ifndef SMOE_ANALYSIS_CELLS_H_
#define SMOE_ANALYSIS_CELLS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis::internal {

// FNV-1a of `s`: addresses a cell's bootstrap stream by its labels.
uint64_t Fnv1a(const std::string& s);

// `v` as a grouping key.
GroupKey KeyOf(const nlohmann::json& v);

// The value of param `name` for `t` (kind defaults fill gaps); null if none.
const nlohmann::json& ParamOf(const TrialPoint& t, const std::string& name,
                              const nlohmann::json& defaults);
// The same from the trial's params alone.
const nlohmann::json& ParamOf(const nlohmann::json& params,
                              const std::string& name,
                              const nlohmann::json& defaults);

// A finite number as JSON, anything else as null.
nlohmann::json NumOrNull(double v);

struct CellKey {
  GroupKey facet, series, x;
  bool operator<(const CellKey& o) const {
    if (facet < o.facet) return true;
    if (o.facet < facet) return false;
    if (series < o.series) return true;
    if (o.series < series) return false;
    return x < o.x;
  }
};

// (facet, series, x) -> (T = num_experts, m = steps * batch_size) of the
// cell's first trial.
using CellParams = std::map<CellKey, std::pair<double, double>>;

// (T, m) of one trial.
std::pair<double, double> TrialTm(const TrialPoint& t,
                                  const nlohmann::json& defaults);
std::pair<double, double> TrialTm(const nlohmann::json& params,
                                  const nlohmann::json& defaults);

// The cell of one trial.
CellKey CellOf(const TrialPoint& t, const AggregateOptions& opt,
               const nlohmann::json& defaults);
CellKey CellOf(const nlohmann::json& params, const AggregateOptions& opt,
               const nlohmann::json& defaults);

// The aggregate of one cell from its (seed, value) pairs (any order).
CurvePoint MakeCurvePoint(const AggregateOptions& options, const CellKey& key,
                          std::vector<std::pair<int64_t, double>> vals);
// The same from `p`'s seeds and values, already in the order MakeCurvePoint
// sorts them into ((seed, value) ascending): fills the rest of `p`.
void FinishCurvePoint(const AggregateOptions& options, const CellKey& key,
                      CurvePoint* p);

}  // namespace smoe::analysis::internal

#endif  // SMOE_ANALYSIS_CELLS_H_
