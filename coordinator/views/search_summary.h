// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/search_summary.h
//
// The read layer's view of an adaptive sweep (docs/adaptive-sweeps.md): the
// strategy, trial-steps used against the full grid's, the pruned trials,
// the newest decisions with their reasons, ASHA's rungs, refine's frontier
// and device-hours. ReadSearchSummary builds it; SearchJson serialises it
// for GET /api/sweeps/{sweep}/search (coordinator/http/http_server.cc).
// gRPC GetSweep serves the usage and decisions part through SweepDetail
// (sweep_detail.h).
//
// Cost (issue 35; bench/results/search-refresh-2026-11-29.md): with the
// read model's snapshot (asha, median), O(decisions shown + pruned trials +
// changes since the last request + the sweep's attempts), not O(trials +
// decisions): the decision count and the newest `limit` from the store's
// (sweep_id, seq) index (ExperimentStore::CountDecisions,
// ListLastDecisions); per sweep a cache keeps the labeler (learned from the
// snapshot's rows once, then from rows added at the end), the pruned
// trials' positions (updated from the rows a refreshed snapshot changed)
// and their last prunes (from the decisions logged since the last read; at
// the first read, the log backwards from its newest decision only until
// every pruned trial has met its last one); the
// attempts from the key range of the trial ids' "<sweep>/" prefix
// (ExperimentStore::ListSweepAttemptsWithPrefix); Scheduler::GetSearchUsage
// in O(reported trials). Without a snapshot (gRPC, tests, refine) the
// scheduler's records are copied and parsed, the whole log read and every
// trial labelled: the reference the snapshot path is tested against
// (SchedulerSearchTest.SearchSummaryFromTheSnapshot*).
#ifndef SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_
#define SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/search/refine.h"
#include "coordinator/scheduler.h"
#include "coordinator/views/sweep_read_model.h"
#include "nlohmann/json.hpp"
#include "store/experiment_store.h"
#include "sweeps/sweep_spec.h"

namespace smoe::coordinator::views {

// A decision with the label of its trial (the parameters that tell it
// apart from the sweep's other trials; empty for a group's decision).
struct SearchDecision {
  store::DecisionRecord record;
  std::string trial_label;
};

// A pruned trial at the value it was stopped at (its last prune decision).
// `params` has the kind's defaults filled in, as the analysis reads them.
struct PrunedPoint {
  std::string trial_id;
  nlohmann::json params;
  int64_t seed = 0;
  int64_t step = 0;
  double value = 0;  // NaN: none
  bool final = false;
};

// A refine group with the x values tried and the state its search settled
// (empty while exploring).
struct FrontierRow {
  analysis::search::RefineGroup group;
  std::set<int64_t> tried;
  std::string settled;  // the settling decision's action
  std::string settled_reason;
};

struct SearchSummary {
  sweeps::SearchSpec search;
  bool adaptive = false;
  // The rest only for an adaptive sweep.
  SearchUsage usage;
  std::vector<std::string> pruned;  // trial ids, by ordinal
  int64_t decisions_total = 0;
  std::vector<SearchDecision> decisions;  // the newest `limit`, oldest first
  std::vector<int64_t> rungs;  // asha, refine + early_stop asha; else empty
  std::vector<PrunedPoint> pruned_points;
  std::vector<FrontierRow> frontier;  // refine only
  // "GPU" (gpus_per_trial > 0) or "slot"; the sum over the sweep's attempts
  // of wall time x devices (at least 1; a running attempt counts until
  // now); that x full_grid_trial_steps / trial_steps_used (none before any
  // step).
  std::string device;
  double device_hours_used = 0;
  std::optional<double> device_hours_full_grid_estimate;
};

// NotFound for an unknown sweep; the store's errors as they come.
// `snapshot` (optional; the read model's, SweepReadModel::Get): the trials'
// ids, parsed params, seeds and states are read from its rows instead of
// copying the scheduler's records and parsing every trial's params (issue
// 35; refine still reads the records for its frontier). Either way the
// same summary for the same trials.
absl::StatusOr<SearchSummary> ReadSearchSummary(
    Scheduler* scheduler, store::ExperimentStore* store,
    const std::string& sweep_id, int limit,
    const SweepSnapshot* snapshot = nullptr);

// {"strategy", "metric", "axis", "early_stop", "smooth_evals",
//  "budget_gpu_hours", "adaptive", and for an adaptive sweep:
//  "trial_steps_used", "full_grid_trial_steps", "pruned": [trial ids],
//  "decisions_total", "decisions": [{seq, trial_id, trial_label, action,
//  group, rung, step, value, cutoff, final, reason, at_ms}], "rungs",
//  "pruned_points": [{trial_id, params, seed, step, value, final}],
//  "frontier": [{group, state, best, best_mean, best_freq, seeds, means:
//  {x: mean}, tried, stopped, reason[, settled, settled_reason]}],
//  "device", "device_hours_used", "device_hours_full_grid_estimate"}.
nlohmann::json SearchJson(const SearchSummary& summary);

// ReadSearchSummary, then SearchJson.
absl::StatusOr<nlohmann::json> ReadSearchJson(
    Scheduler* scheduler, store::ExperimentStore* store,
    const std::string& sweep_id, int limit,
    const SweepSnapshot* snapshot = nullptr);

}  // namespace smoe::coordinator::views

#endif  // SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_
