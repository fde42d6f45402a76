// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/sweep_detail.h
//
// The read layer's plain views of one sweep and one trial, which both
// transports serialise: gRPC Coordinator/GetSweep and GetTrialMetrics
// (coordinator/grpc/service_impl.cc) and the dashboard's GET
// /api/trials/{id}/metrics (coordinator/http/http_server.cc). The dashboard's
// sweep page reads the same trial rows through the read model
// (coordinator/views/sweep_read_model.h); views_test
// (tests/coordinator/views_test.cc) checks that the gRPC and HTTP answers
// for a sweep agree.
//
// Thread safety: the functions are safe for concurrent use (the Scheduler and
// the store are).
#ifndef SMOE_COORDINATOR_VIEWS_SWEEP_DETAIL_H_
#define SMOE_COORDINATOR_VIEWS_SWEEP_DETAIL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/scheduler.h"
#include "store/experiment_store.h"

namespace smoe::coordinator::views {

// One trial of a sweep: its record joined with its summary's results.
struct TrialDetail {
  store::TrialRecord record;
  std::map<std::string, double> results;  // empty until it reports some
  double duration_s = 0;                  // wall time of the successful attempt
};

// A sweep with (when asked) its trials and results, and for an adaptive
// sweep its search usage and newest decisions.
struct SweepDetail {
  SweepView sweep;
  std::vector<TrialDetail> trials;  // by ordinal; empty unless asked
  bool adaptive = false;
  SearchUsage search_usage;  // adaptive sweeps only
  // The newest `decisions_limit` decisions, oldest first, and how many the
  // log held (both only when decisions_limit > 0).
  std::vector<store::DecisionRecord> decisions;
  int decisions_total = 0;
};

struct SweepDetailOptions {
  bool include_trials = false;
  int decisions_limit = 0;  // 0: the decision log is not read
};

// NotFound for an unknown sweep; the store's errors as they come.
absl::StatusOr<SweepDetail> ReadSweepDetail(Scheduler* scheduler,
                                            store::ExperimentStore* store,
                                            const std::string& sweep_id,
                                            const SweepDetailOptions& options);

// A trial's metric series (every point, ordered by name then step), its
// attempts and its record.
struct TrialMetrics {
  store::TrialRecord trial;
  std::vector<store::MetricRecord> metrics;
  std::vector<store::AttemptRecord> attempts;
};

// `name`: only that metric's series. NotFound for an unknown trial.
absl::StatusOr<TrialMetrics> ReadTrialMetrics(
    store::ExperimentStore* store, const std::string& trial_id,
    const std::optional<std::string>& name);

}  // namespace smoe::coordinator::views

#endif  // SMOE_COORDINATOR_VIEWS_SWEEP_DETAIL_H_
