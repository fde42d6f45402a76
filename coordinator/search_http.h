// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/search_http.h
//
// The dashboard's view of an adaptive sweep (docs/adaptive-sweeps.md):
// GET /api/sweeps/<id>/search answers SearchJson — the strategy, trial-steps
// used against the full grid's, the pruned trials and the newest decisions
// with their reasons. Kept apart from http_server.cc (one route there).
#ifndef SMOE_COORDINATOR_SEARCH_HTTP_H_
#define SMOE_COORDINATOR_SEARCH_HTTP_H_

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/scheduler.h"
#include "nlohmann/json.hpp"
#include "store/experiment_store.h"

namespace smoe::coordinator {

// {"strategy", "metric", "adaptive", "trial_steps_used",
//  "full_grid_trial_steps", "decisions_total", "pruned": [trial ids],
//  "decisions": [{seq, trial_id, action, group, rung, step, value, cutoff,
//  final, reason, at_ms}] (the newest `limit`, oldest first)}.
// NotFound for an unknown sweep; a grid sweep has "adaptive": false.
absl::StatusOr<nlohmann::json> SearchJson(Scheduler* scheduler,
                                          store::ExperimentStore* store,
                                          const std::string& sweep_id,
                                          int limit);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_SEARCH_HTTP_H_
