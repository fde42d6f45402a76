// Copyright 2026 SMoE Lab authors.
//
// File: store/types.h
//
// Plain records persisted by an ExperimentStore. These are the coordinator's
// domain types: the gRPC adapter converts them to and from proto messages, and
// nothing here depends on protobuf.
//
// Identity:
//   sweep_id  = the sweep's name ([a-z0-9][a-z0-9._-]{0,63}).
//   trial_id  = "<sweep_id>/<16 hex digits>", the digits a hash of
//               (kind, resolved params, seed), so re-submitting or extending a
//               sweep never duplicates a point.
//   attempt   = 1, 2, ... per trial; each lease starts a new attempt.
#ifndef SMOE_STORE_TYPES_H_
#define SMOE_STORE_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace smoe::store {

// Lifecycle of one grid point.
//   kPending -> kRunning (leased) -> kSucceeded | kFailed | kPending (retry,
//   preemption, lost lease) ; kPending | kRunning -> kCancelled.
//   Adaptive sweeps (docs/adaptive-sweeps.md): kPending | kRunning -> kPruned
//   (stopped by the search policy; checkpoint kept, no error budget spent)
//   -> kPending (promoted: resumes from its checkpoint).
enum class TrialState {
  kPending = 0,
  kRunning = 1,
  kSucceeded = 2,
  kFailed = 3,
  kCancelled = 4,
  kPruned = 5,
};

// How one attempt ended.
enum class AttemptOutcome {
  kRunning = 0,    // still leased
  kSucceeded = 1,  // trainer exit 0 with a result
  kFailed = 2,     // error: consumes the error budget
  kPreempted = 3,  // exit 75 / drain: never consumes the error budget
  kLost = 4,       // lease expired (worker silent): consumes no error budget
  kCancelled = 5,  // the user cancelled the sweep
  kBadSpec = 6,    // exit 64: failed permanently, no retry
  kHung = 7,       // no trainer event within the progress deadline; killed.
                   // Consumes the error budget, like kFailed
  kPruned = 8,     // stopped by the sweep's search policy: no budget used
};

enum class SweepState {
  kActive = 0,     // has pending or running trials
  kCompleted = 1,  // every trial succeeded or failed
  kCancelled = 2,
};

// Returns "pending", "running", ... (stable strings; stored in SQLite).
const char* TrialStateName(TrialState s);
const char* AttemptOutcomeName(AttemptOutcome o);
const char* SweepStateName(SweepState s);
// Parses the names above; InvalidArgument names the unknown value.
absl::StatusOr<TrialState> ParseTrialState(absl::string_view name);
absl::StatusOr<AttemptOutcome> ParseAttemptOutcome(absl::string_view name);
absl::StatusOr<SweepState> ParseSweepState(absl::string_view name);

// True for kSucceeded, kFailed, kCancelled (not kPruned: a pruned trial can
// be promoted).
bool IsTerminal(TrialState s);

struct SweepRecord {
  std::string sweep_id;
  std::string kind;       // "sraven" | "skillmix"
  std::string spec_yaml;  // the sweep file as submitted (latest, after extends)
  int priority = 0;       // higher runs first
  int max_error_retries = 2;  // errors allowed per trial before kFailed
  SweepState state = SweepState::kActive;
  absl::Time created_at = absl::UnixEpoch();
  absl::Time updated_at = absl::UnixEpoch();
  // Set from the dashboard by admins (schema 3): free-text notes, tags, and
  // whether the sweep is archived (hidden from the default sweep list).
  std::string notes;
  std::vector<std::string> tags;
  bool archived = false;
};

struct TrialRecord {
  std::string trial_id;
  std::string sweep_id;
  int64_t ordinal = 0;      // position in the sweep's expansion order
  std::string params_json;  // resolved params, canonical JSON object
  int64_t seed = 0;
  TrialState state = TrialState::kPending;
  int attempt = 0;        // number of the latest attempt (0 = never leased)
  int error_count = 0;    // attempts that ended kFailed
  int preempt_count = 0;  // attempts that ended kPreempted or kLost
  int gpus = 0;           // GPUs one attempt needs (= ep_size for EP trials)
  std::string worker_id;  // lease holder while kRunning, else empty
  absl::Time lease_expires_at = absl::UnixEpoch();
  std::string last_error;  // last failure message, for the user
  absl::Time created_at = absl::UnixEpoch();
  absl::Time updated_at = absl::UnixEpoch();
};

struct AttemptRecord {
  std::string trial_id;
  int attempt = 0;
  std::string worker_id;
  AttemptOutcome outcome = AttemptOutcome::kRunning;
  int exit_code = 0;
  std::string message;
  absl::Time started_at = absl::UnixEpoch();
  absl::Time ended_at = absl::UnixEpoch();  // UnixEpoch while running
};

// One metric point. Unique per (trial_id, step, name): re-sending overwrites.
// `attempt` records which attempt wrote it (the coordinator refuses stale
// ones).
struct MetricRecord {
  std::string trial_id;
  int64_t step = 0;
  std::string name;
  double value = 0;
  int attempt = 0;
};

struct WorkerRecord {
  std::string worker_id;
  std::string hostname;
  int cpus = 0;
  int gpus = 0;
  int slots = 1;
  std::map<std::string, std::string> labels;
  std::vector<std::string> kinds;  // trial kinds it can run
  bool draining = false;
  absl::Time registered_at = absl::UnixEpoch();
  absl::Time last_heartbeat_at = absl::UnixEpoch();
};

// The per-trial summary the dashboard reads: the trial's identity and params
// plus its final result metrics (the trainer's `result` event).
struct TrialSummary {
  std::string trial_id;
  std::string sweep_id;
  std::string params_json;
  int64_t seed = 0;
  TrialState state = TrialState::kPending;
  int attempt = 0;
  std::string worker_id;
  double duration_s = 0;  // wall time of the successful attempt
  std::map<std::string, double> results;
  // Why the trial last failed (TrialRecord::last_error; empty if it never
  // did) and the exit code of its latest ended attempt, if any (the
  // dashboard's trials table shows both).
  std::string last_error;
  std::optional<int> last_exit_code;
};

// One decision of an adaptive sweep's search policy (docs/adaptive-sweeps.md),
// appended to the sweep's decision log in the same commit as the state change
// it causes. `seq` is assigned by the store (increasing per store; 0 in a
// batch).
struct DecisionRecord {
  int64_t seq = 0;
  std::string sweep_id;
  std::string trial_id;  // "" for a group-level decision
  std::string action;    // prune | promote | retry | add | resolve | ...
  std::string group;     // the policy's group label
  int rung = -1;         // ASHA rung; -1 when none applies
  int64_t step = 0;      // the step the decision is about
  double value = 0;      // the trial's value there (NaN: none)
  double cutoff = 0;     // the value it had to beat (NaN: none)
  bool final = false;
  std::string reason;
  absl::Time at = absl::UnixEpoch();
};

// Metadata of one checkpoint blob the coordinator keeps for a trial (the
// bytes are a file in the coordinator's data dir, never in the store; see
// coordinator/checkpoint_store.h). Unique per (trial_id, step).
struct CheckpointRecord {
  std::string trial_id;
  int64_t step = 0;       // the trainer's checkpoint event step
  std::string file_name;  // the file's name in the trial's work dir
  int64_t bytes = 0;
  std::string sha256;     // lowercase hex of the whole blob
  int attempt = 0;        // the attempt that uploaded it
  std::string worker_id;  // the worker that uploaded it
  absl::Time created_at = absl::UnixEpoch();
};

// The kept end of one attempt's log (the trainer's stderr and non-event
// stdout lines; docs/logs-and-system-metrics.md). Unique per (trial_id,
// attempt).
struct TrialLogRecord {
  std::string trial_id;
  int attempt = 0;
  std::string text;         // the log's last bytes (at most 64 KiB)
  int64_t total_bytes = 0;  // bytes the log had in all; `text` ends there
  absl::Time updated_at = absl::UnixEpoch();
};

// A set of writes applied atomically by ExperimentStore::Commit. Rows are
// upserted by primary key:
//   sweeps by sweep_id; trials by trial_id; attempts by (trial_id, attempt);
//   metrics by (trial_id, step, name); workers by worker_id;
//   results replace all result metrics of the trial (trial_id -> name ->
//   value), along with its duration.
struct WriteBatch {
  std::vector<SweepRecord> sweeps;
  std::vector<TrialRecord> trials;
  std::vector<AttemptRecord> attempts;
  std::vector<MetricRecord> metrics;
  std::vector<WorkerRecord> workers;
  struct Result {
    std::string trial_id;
    double duration_s = 0;
    std::map<std::string, double> values;
  };
  std::vector<Result> results;
  // Appended (never upserted), after the sweeps and trials they refer to.
  std::vector<DecisionRecord> decisions;
  // Checkpoint rows upserted by (trial_id, step), then rows deleted.
  std::vector<CheckpointRecord> checkpoints;
  std::vector<std::pair<std::string, int64_t>> deleted_checkpoints;
  // Attempt logs upserted by (trial_id, attempt).
  std::vector<TrialLogRecord> trial_logs;
  // Sweeps deleted after every other write of the batch, each with every row
  // keyed by it: its trials and their attempts, metrics, results, checkpoint
  // rows and logs, and its decisions (workers are not the sweep's). A sweep
  // that neither exists nor is created earlier in the batch makes Commit
  // fail with NotFound naming it (nothing written). The checkpoint blob
  // files are the coordinator's to remove (coordinator/checkpoint_store.h).
  std::vector<std::string> deleted_sweeps;

  bool empty() const {
    return sweeps.empty() && trials.empty() && attempts.empty() &&
           metrics.empty() && workers.empty() && results.empty() &&
           decisions.empty() && checkpoints.empty() &&
           deleted_checkpoints.empty() && trial_logs.empty() &&
           deleted_sweeps.empty();
  }
};

}  // namespace smoe::store

#endif  // SMOE_STORE_TYPES_H_
