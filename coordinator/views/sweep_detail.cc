// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/sweep_detail.h"

#include <algorithm>
#include <utility>

#include "common/status_macros.h"
#include "coordinator/search_driver.h"

namespace smoe::coordinator::views {

absl::StatusOr<SweepDetail> ReadSweepDetail(Scheduler* scheduler,
                                            store::ExperimentStore* store,
                                            const std::string& sweep_id,
                                            const SweepDetailOptions& options) {
  SweepDetail out;
  SMOE_ASSIGN_OR_RETURN(out.sweep, scheduler->GetSweep(sweep_id));
  if (options.include_trials) {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialSummary> rows,
                          store->ListSummaries(sweep_id));
    SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialRecord> trials,
                          scheduler->ListTrials(sweep_id));
    std::map<std::string, const store::TrialSummary*> by_id;
    for (const auto& r : rows) by_id[r.trial_id] = &r;
    out.trials.reserve(trials.size());
    for (store::TrialRecord& t : trials) {
      TrialDetail d;
      auto it = by_id.find(t.trial_id);
      if (it != by_id.end()) {
        d.results = it->second->results;
        d.duration_s = it->second->duration_s;
      }
      d.record = std::move(t);
      out.trials.push_back(std::move(d));
    }
  }
  out.adaptive = IsAdaptive(out.sweep.spec);
  if (out.adaptive) {
    SMOE_ASSIGN_OR_RETURN(out.search_usage,
                          scheduler->GetSearchUsage(sweep_id));
    // The log is read only when asked for (watchers poll GetSweep).
    // The newest decisions_limit and the count from the store's index, not
    // the whole log (issue 35).
    if (options.decisions_limit > 0) {
      SMOE_ASSIGN_OR_RETURN(
          out.decisions,
          store->ListLastDecisions(sweep_id, options.decisions_limit));
      SMOE_ASSIGN_OR_RETURN(int64_t total, store->CountDecisions(sweep_id));
      out.decisions_total = static_cast<int>(total);
    }
  }
  return out;
}

absl::StatusOr<TrialMetrics> ReadTrialMetrics(
    store::ExperimentStore* store, const std::string& trial_id,
    const std::optional<std::string>& name) {
  TrialMetrics out;
  SMOE_ASSIGN_OR_RETURN(out.trial, store->GetTrial(trial_id));
  SMOE_ASSIGN_OR_RETURN(out.metrics, store->ListMetrics(trial_id, name));
  SMOE_ASSIGN_OR_RETURN(out.attempts, store->ListAttempts(trial_id));
  return out;
}

}  // namespace smoe::coordinator::views
