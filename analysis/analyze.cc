// Copyright 2026 SMoE Lab authors.
#include "analysis/analyze.h"

namespace smoe::analysis {

using nlohmann::json;

json AnalyzeSweep(const std::vector<TrialPoint>& trials,
                  const AggregateOptions& options) {
  const Curves curves = AggregateCurves(trials, options);
  // The paper's E(k, N) maps k = top_k and N = M of SRAVEN: no fit (and no
  // theory block) for other kinds or other axes (issue 31 item 6).
  std::vector<TheoryFit> fits;
  if (FitsTheory(options)) fits = FitTotalError(curves, trials);
  return AnalysisJson(options, curves, ComputeOptimalK(curves), fits);
}

json AnalysisJson(const AggregateOptions& options, const Curves& curves,
                  const std::vector<OptimalK>& optimal_k,
                  const std::vector<TheoryFit>& theory) {
  json optimal = json::array();
  for (const OptimalK& o : optimal_k) optimal.push_back(ToJson(o));
  json fits = json::array();
  for (const TheoryFit& f : theory) fits.push_back(ToJson(f));
  return {{"metric", options.metric},
          {"x", options.x},
          {"series", options.series},
          {"facet", options.facet},
          {"curves", ToJson(curves)},
          {"optimal", optimal},
          {"fits", fits},
          {"model",
           "E(k,N) = a*N^2/k + b*sqrt(N*k/m*log(T/k)); error = 1 - metric; "
           "k = top_k, N = M, T = num_experts, m = steps*batch_size"}};
}

}  // namespace smoe::analysis
