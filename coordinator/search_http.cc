// Copyright 2026 SMoE Lab authors.
#include "coordinator/search_http.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/time/time.h"
#include "common/status_macros.h"
#include "coordinator/search_driver.h"

namespace smoe::coordinator {

using nlohmann::json;

absl::StatusOr<json> SearchJson(Scheduler* scheduler,
                                store::ExperimentStore* store,
                                const std::string& sweep_id, int limit) {
  SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler->GetSweep(sweep_id));
  json out = {{"strategy", v.spec.search.strategy},
              {"metric", v.spec.search.metric},
              {"adaptive", IsAdaptive(v.spec)}};
  if (!IsAdaptive(v.spec)) return out;
  SMOE_ASSIGN_OR_RETURN(SearchUsage u, scheduler->GetSearchUsage(sweep_id));
  out["trial_steps_used"] = u.trial_steps_used;
  out["full_grid_trial_steps"] = u.full_grid_trial_steps;
  SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialRecord> trials,
                        scheduler->ListTrials(sweep_id));
  json pruned = json::array();
  for (const store::TrialRecord& t : trials) {
    if (t.state == store::TrialState::kPruned) pruned.push_back(t.trial_id);
  }
  out["pruned"] = pruned;
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                        store->ListDecisions(sweep_id, 0, 0));
  out["decisions_total"] = log.size();
  const size_t keep = static_cast<size_t>(std::max(0, limit));
  const size_t first = log.size() > keep ? log.size() - keep : 0;
  json decisions = json::array();
  for (size_t i = first; i < log.size(); ++i) {
    const store::DecisionRecord& d = log[i];
    decisions.push_back(
        {{"seq", d.seq},
         {"trial_id", d.trial_id},
         {"action", d.action},
         {"group", d.group},
         {"rung", d.rung},
         {"step", d.step},
         {"value", std::isfinite(d.value) ? json(d.value) : json()},
         {"cutoff", std::isfinite(d.cutoff) ? json(d.cutoff) : json()},
         {"final", d.final},
         {"reason", d.reason},
         {"at_ms", absl::ToUnixMillis(d.at)}});
  }
  out["decisions"] = decisions;
  return out;
}

}  // namespace smoe::coordinator
