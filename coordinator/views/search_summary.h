// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/search_summary.h
//
// The dashboard's view of an adaptive sweep (docs/adaptive-sweeps.md):
// GET /api/sweeps/<id>/search answers SearchJson — the strategy, trial-steps
// used against the full grid's, the pruned trials and the newest decisions
// with their reasons. Kept apart from http_server.cc (one route there).
#ifndef SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_
#define SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/scheduler.h"
#include "nlohmann/json.hpp"
#include "store/experiment_store.h"

namespace smoe::coordinator {

// {"strategy", "metric", "adaptive", "trial_steps_used",
//  "full_grid_trial_steps", "decisions_total", "pruned": [trial ids],
//  "decisions": [{seq, trial_id, action, group, rung, step, value, cutoff,
//  final, reason, at_ms}] (the newest `limit`, oldest first),
//  "rungs": [ASHA rung steps] (asha, refine + early_stop asha; else []),
//  "pruned_points": [{trial_id, params, seed, step, value, final}] (each
//  pruned trial's last prune decision: the value it was stopped at; params
//  with the kind's defaults filled in, as the analysis reads them),
//  "frontier": [{group, state, best, best_mean, best_freq, seeds, means:
//  {x: mean}, tried: [x], stopped: [x], reason}] (refine only; else []),
//  "device_hours_used": the sum over the sweep's attempts of wall time x
//  devices (gpus_per_trial, at least 1; a running attempt counts until
//  now), "device": "GPU" or "slot", "device_hours_full_grid_estimate":
//  device_hours_used x full_grid_trial_steps / trial_steps_used (null
//  before any step)}.
// NotFound for an unknown sweep; a grid sweep has "adaptive": false.
absl::StatusOr<nlohmann::json> SearchJson(Scheduler* scheduler,
                                          store::ExperimentStore* store,
                                          const std::string& sweep_id,
                                          int limit);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_VIEWS_SEARCH_SUMMARY_H_
