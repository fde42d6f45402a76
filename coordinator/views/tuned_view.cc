// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/tuned_view.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::coordinator {

absl::StatusOr<analysis::TunedAnalysis> ReadTunedAnalysis(
    const std::vector<analysis::TrialPoint>& points,
    const analysis::AggregateOptions& options,
    const analysis::TuneOptions& tune, const std::string& sweep_id) {
  std::map<std::string, std::set<std::string>> values;
  std::set<std::string> metrics;
  for (const analysis::TrialPoint& p : points) {
    if (p.params.is_object()) {
      for (const auto& [k, v] : p.params.items()) values[k].insert(v.dump());
    }
    for (const auto& [name, value] : p.results) metrics.insert(name);
  }
  std::vector<std::string> swept;
  for (const auto& [k, vs] : values) {
    if (vs.size() >= 2) swept.push_back(k);
  }
  for (const std::string& t : tune.tune) {
    if (std::find(swept.begin(), swept.end(), t) != swept.end()) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("tune: '", t, "' is not a swept parameter of sweep ",
                     sweep_id, "; its swept parameters: ",
                     swept.empty() ? "none" : absl::StrJoin(swept, ", ")));
  }
  if (!metrics.empty() && metrics.count(tune.select_by) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "select_by: '", tune.select_by, "' is not a result of sweep ", sweep_id,
        " (trials trained before the validation split have no "
        "val_acc); its metrics: ",
        absl::StrJoin(metrics, ", ")));
  }
  return analysis::AnalyzeTuned(points, options, tune);
}

}  // namespace smoe::coordinator
