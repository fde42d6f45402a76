// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/tuned_view.h
//
// The tuned analysis of a sweep (issue 33 item 3; analysis/tuned.h): the
// optimal x when every x gets its own tuned hyperparameters, selected on
// `select_by` (the validation split) and reported on the analysis metric.
// GET /api/sweeps/<id>/analysis/tuned serialises it (analysis::ToJson);
// `smoe analyze --tune` computes the same from GetSweep's trials.
#ifndef SMOE_COORDINATOR_VIEWS_TUNED_VIEW_H_
#define SMOE_COORDINATOR_VIEWS_TUNED_VIEW_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/stats.h"
#include "analysis/tuned.h"

namespace smoe::coordinator {

// Runs the tuned analysis over `points` (a sweep snapshot's trials).
// InvalidArgument naming the field and value when a tuned parameter is not
// one the sweep varies (listing those it does), when no trial reported
// `select_by` (listing the metrics there are), or when analysis::AnalyzeTuned
// refuses the query.
absl::StatusOr<analysis::TunedAnalysis> ReadTunedAnalysis(
    const std::vector<analysis::TrialPoint>& points,
    const analysis::AggregateOptions& options,
    const analysis::TuneOptions& tune, const std::string& sweep_id);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_VIEWS_TUNED_VIEW_H_
