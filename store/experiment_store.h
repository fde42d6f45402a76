// Copyright 2026 SMoE Lab authors.
//
// File: store/experiment_store.h
//
// ExperimentStore persists sweeps, trials, attempts, metrics, workers and the
// per-trial result summary. The coordinator is its only writer; it keeps the
// scheduling state in memory, writes every transition through Commit() before
// acknowledging it, and reloads everything with the List*() calls on restart.
//
// Implementations: SqliteStore (WAL, busy timeout, foreign keys, migrations;
// production) and InMemoryStore (tests). Both pass store_contract_test.
//
// Thread safety: implementations are safe for concurrent use; Commit() calls
// are serialised.
#ifndef SMOE_STORE_EXPERIMENT_STORE_H_
#define SMOE_STORE_EXPERIMENT_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/types.h"

namespace smoe::store {

class ExperimentStore {
 public:
  virtual ~ExperimentStore() = default;

  // Applies every write in `batch` atomically: after a crash at any point,
  // either all of it or none of it is visible. Returns FailedPrecondition when
  // a row references a missing parent (a trial of an unknown sweep, an attempt
  // or metric or result of an unknown trial), and NotFound naming the sweep
  // when `batch.deleted_sweeps` names one that does not exist; nothing is
  // written then.
  virtual absl::Status Commit(const WriteBatch& batch) = 0;

  // Returns NotFound when there is no such sweep / trial.
  virtual absl::StatusOr<SweepRecord> GetSweep(absl::string_view sweep_id) = 0;
  virtual absl::StatusOr<TrialRecord> GetTrial(absl::string_view trial_id) = 0;

  // Returns every sweep, oldest first.
  virtual absl::StatusOr<std::vector<SweepRecord>> ListSweeps() = 0;
  // Returns the trials of `sweep_id` (all sweeps when empty) by ordinal.
  virtual absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      absl::string_view sweep_id) = 0;
  // Returns the attempts of one trial, by attempt number.
  virtual absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(
      absl::string_view trial_id) = 0;
  // Returns the attempts of every trial of `sweep_id`, by (trial_id,
  // attempt): one read for what ListAttempts per trial would return (the
  // dashboard's device-hours of a sweep). The default asks per trial.
  virtual absl::StatusOr<std::vector<AttemptRecord>> ListSweepAttempts(
      absl::string_view sweep_id);
  // ListSweepAttempts' rows whose trial id starts with `trial_id_prefix`,
  // in its order: all of them when every trial of the sweep has the prefix
  // (the scheduler names a sweep's trials "<sweep>/<hash>"). SqliteStore
  // reads them from the attempts' key range instead of probing the attempts
  // once per trial of the sweep (issue 35: 10^5 probes per dashboard
  // refresh of an adaptive sweep). The default filters ListSweepAttempts.
  virtual absl::StatusOr<std::vector<AttemptRecord>>
  ListSweepAttemptsWithPrefix(absl::string_view sweep_id,
                              absl::string_view trial_id_prefix);
  // Returns every registered worker.
  virtual absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() = 0;

  // Returns the metric points of one trial ordered by (name, step); only those
  // named `name` when given.
  virtual absl::StatusOr<std::vector<MetricRecord>> ListMetrics(
      absl::string_view trial_id, std::optional<std::string> name) = 0;

  // Returns one summary row per trial of `sweep_id`, by ordinal. Cheap: reads
  // the trials and results tables only (never the metrics table).
  virtual absl::StatusOr<std::vector<TrialSummary>> ListSummaries(
      absl::string_view sweep_id) = 0;
  // Returns the decision log of `sweep_id` in commit order (by seq); only
  // those with seq > `after_seq`, at most `limit` (0 = all).
  virtual absl::StatusOr<std::vector<DecisionRecord>> ListDecisions(
      absl::string_view sweep_id, int64_t after_seq, int64_t limit) = 0;
  // The size of `sweep_id`'s decision log (ListDecisions(sweep_id, 0, 0)'s
  // size; 0 for an unknown sweep). SqliteStore keeps each sweep's count,
  // checked against the log's first and last seq (two index probes) and
  // topped up by counting only the decisions after the last (issue 35: an
  // asha sweep of 10^5 trials logs 10^5+ decisions; a dashboard refresh
  // needs the count, not the log). The default reads the log.
  virtual absl::StatusOr<int64_t> CountDecisions(absl::string_view sweep_id);
  // The newest `limit` decisions of `sweep_id`, oldest first: the tail of
  // ListDecisions(sweep_id, 0, 0) (none when `limit` <= 0). SqliteStore reads
  // them backwards from the (sweep_id, seq) index: O(limit). The default
  // reads the log.
  virtual absl::StatusOr<std::vector<DecisionRecord>> ListLastDecisions(
      absl::string_view sweep_id, int64_t limit);
  // The newest `limit` decisions of `sweep_id` with seq < `before_seq`,
  // oldest first (none when `limit` <= 0): pages of the log read backwards
  // (SqliteStore: from the index, O(limit)). The default reads the log.
  virtual absl::StatusOr<std::vector<DecisionRecord>> ListDecisionsBefore(
      absl::string_view sweep_id, int64_t before_seq, int64_t limit);

  // Returns the summary rows of the given trials of `sweep_id` (ids of other
  // sweeps and unknown ids are skipped), by ordinal. Costs O(ids), so callers
  // can refresh a few changed rows of a large sweep.
  virtual absl::StatusOr<std::vector<TrialSummary>> ListSummariesOf(
      absl::string_view sweep_id,
      const std::vector<std::string>& trial_ids) = 0;

  // Returns the checkpoint rows of `trial_id` (every trial's when empty),
  // ordered by (trial_id, step).
  virtual absl::StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(
      absl::string_view trial_id) = 0;

  // Returns the stored attempt logs of `trial_id`, by attempt.
  virtual absl::StatusOr<std::vector<TrialLogRecord>> ListTrialLogs(
      absl::string_view trial_id) = 0;
};

}  // namespace smoe::store

#endif  // SMOE_STORE_EXPERIMENT_STORE_H_
