// Copyright 2026 SMoE Lab authors.
//
// File: analysis/analyze.h
//
// The analysis the dashboard and `smoe analyze` show, as JSON: curves of a
// metric (x = top_k, series = M, facet = attention by default), the optimal k
// per cell (analysis/optimal_k.h) and the theory fit (analysis/theory_fit.h;
// skipped when the metric is not an accuracy).
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_ANALYZE_H_
#define SMOE_ANALYSIS_ANALYZE_H_

#include <vector>

#include "analysis/optimal_k.h"
#include "analysis/stats.h"
#include "analysis/theory_fit.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

// Aggregates `trials` with `options`, then computes the optimal k and the fit.
nlohmann::json AnalyzeSweep(const std::vector<TrialPoint>& trials,
                            const AggregateOptions& options);

// The JSON of AnalyzeSweep from its computed parts.
nlohmann::json AnalysisJson(const AggregateOptions& options,
                            const Curves& curves,
                            const std::vector<OptimalK>& optimal_k,
                            const std::vector<TheoryFit>& theory);

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_ANALYZE_H_
