// Copyright 2026 SMoE Lab authors.
//
// File: store/in_memory_store.h
//
// InMemoryStore: an ExperimentStore kept in std::maps, for tests of the
// coordinator and anything else that needs a store without a file. It has the
// same semantics as SqliteStore (store_contract_test runs against both):
// upserts by primary key, a resent metric overwrites, results replace, a batch
// naming a missing parent fails with FailedPrecondition and writes nothing,
// times are kept at microsecond precision, NaN metric values round-trip.
// Nothing survives destruction.
//
// Thread safety: safe for concurrent use; every call takes one absl::Mutex.
#ifndef SMOE_STORE_IN_MEMORY_STORE_H_
#define SMOE_STORE_IN_MEMORY_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "store/experiment_store.h"

namespace smoe::store {

class InMemoryStore final : public ExperimentStore {
 public:
  InMemoryStore() = default;
  InMemoryStore(const InMemoryStore&) = delete;
  InMemoryStore& operator=(const InMemoryStore&) = delete;

  absl::Status Commit(const WriteBatch& batch) override;
  absl::StatusOr<SweepRecord> GetSweep(absl::string_view sweep_id) override;
  absl::StatusOr<TrialRecord> GetTrial(absl::string_view trial_id) override;
  absl::StatusOr<std::vector<SweepRecord>> ListSweeps() override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(
      absl::string_view trial_id) override;
  absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() override;
  absl::StatusOr<std::vector<MetricRecord>> ListMetrics(
      absl::string_view trial_id, std::optional<std::string> name) override;
  absl::StatusOr<std::vector<TrialSummary>> ListSummaries(
      absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListDecisions(
      absl::string_view sweep_id, int64_t after_seq, int64_t limit) override;
  absl::StatusOr<int64_t> CountDecisions(absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListLastDecisions(
      absl::string_view sweep_id, int64_t limit) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListDecisionsBefore(
      absl::string_view sweep_id, int64_t before_seq, int64_t limit) override;
  absl::StatusOr<std::vector<TrialSummary>> ListSummariesOf(
      absl::string_view sweep_id,
      const std::vector<std::string>& trial_ids) override;
  absl::StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(
      absl::string_view trial_id) override;
  absl::StatusOr<std::vector<TrialLogRecord>> ListTrialLogs(
      absl::string_view trial_id) override;

 private:
  struct StoredSweep {
    int64_t seq = 0;  // insertion order, the tie-break of ListSweeps
    SweepRecord record;
  };
  struct StoredResult {
    double duration_s = 0;
    std::map<std::string, double> values;
  };
  // Checks every parent reference of `batch` against the stored rows and the
  // batch's own sweeps/trials; writes nothing.
  absl::Status Validate(const WriteBatch& batch) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // True when trial `id` is stored or among `batch_trials`.
  bool TrialKnown(const std::string& id,
                  const std::set<absl::string_view>& batch_trials) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Returns the trials of `sweep_id` (all when empty) ordered like ListTrials.
  std::vector<const TrialRecord*> SortedTrials(absl::string_view sweep_id) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Erases sweep `sweep_id` and every row keyed by it (WriteBatch::
  // deleted_sweeps).
  void DeleteSweepLocked(const std::string& sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns the summary row of `t`.
  TrialSummary SummaryLocked(const TrialRecord& t) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, StoredSweep, std::less<>> sweeps_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, TrialRecord, std::less<>> trials_ ABSL_GUARDED_BY(mu_);
  // (trial_id, attempt) -> record.
  std::map<std::pair<std::string, int>, AttemptRecord> attempts_
      ABSL_GUARDED_BY(mu_);
  // (trial_id, name, step) -> record: iteration order is ListMetrics' order.
  std::map<std::tuple<std::string, std::string, int64_t>, MetricRecord> metrics_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerRecord, std::less<>> workers_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, StoredResult, std::less<>> results_
      ABSL_GUARDED_BY(mu_);
  std::vector<DecisionRecord> decisions_ ABSL_GUARDED_BY(mu_);  // by seq
  // (trial_id, step) -> record.
  std::map<std::pair<std::string, int64_t>, CheckpointRecord> checkpoints_
      ABSL_GUARDED_BY(mu_);
  // (trial_id, attempt) -> record.
  std::map<std::pair<std::string, int>, TrialLogRecord> trial_logs_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace smoe::store

#endif  // SMOE_STORE_IN_MEMORY_STORE_H_
