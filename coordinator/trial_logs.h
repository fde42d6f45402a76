// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/trial_logs.h
//
// Attempt logs on the coordinator (docs/logs-and-system-metrics.md). The
// worker keeps each attempt's full (bounded, rotated) log; the coordinator
// keeps:
//   - the last 64 KiB of every ended attempt's log, sent with its Complete or
//     Fail report and stored in the store's trial_logs table (one row per
//     attempt; it outlives the worker);
//   - in memory, the latest live tail of a running attempt. A reader asking
//     for a running attempt's log marks it wanted for kWantWindow; while it is
//     wanted, the worker's heartbeat replies carry TYPE_SEND_LOG and its next
//     heartbeats the tail, so a live tail trails the trainer by about one
//     heartbeat interval.
// Routes: Coordinator/GetTrialLogs (gRPC) and (coordinator/http/log_routes.h)
//   GET /api/trials/{id}/logs[?attempt=N]
//       {"trial_id","attempt","attempts":[...],"running","as_of_ms",
//        "total_bytes","text"}
// both for the viewer role (coordinator/api/operations.cc).
//
// Thread-safe.
#ifndef SMOE_COORDINATOR_TRIAL_LOGS_H_
#define SMOE_COORDINATOR_TRIAL_LOGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

struct TrialLogView {
  std::string trial_id;
  int attempt = 0;            // 0: the trial has not run yet
  std::vector<int> attempts;  // every attempt, oldest first
  bool running = false;       // a live tail (as of `as_of`)
  std::string text;
  int64_t total_bytes = 0;
  absl::Time as_of = absl::UnixEpoch();  // epoch: nothing received yet
};

class TrialLogs {
 public:
  static constexpr size_t kMaxTextBytes = 64 << 10;
  static constexpr absl::Duration kWantWindow = absl::Seconds(15);

  // Neither pointer is owned.
  TrialLogs(store::ExperimentStore* store, Clock* clock)
      : store_(store), clock_(clock) {}

  // The log of `attempt` of `trial_id` (0: the latest attempt). A running
  // attempt's is the latest live tail, and asking marks it wanted. Errors:
  // NotFound for an unknown trial or attempt (naming the attempts there
  // are), InvalidArgument for a negative attempt.
  absl::StatusOr<TrialLogView> Read(const std::string& trial_id, int attempt);

  // True while a reader asked for this attempt's log within kWantWindow.
  bool Wanted(const std::string& trial_id, int attempt);

  // A running attempt's tail, from its worker's heartbeat.
  void PutLive(const std::string& trial_id, int attempt, std::string text,
               int64_t total_bytes);
  // An ended attempt's tail, stored (text cut to its last kMaxTextBytes, at
  // a line start). Errors: the store's (FailedPrecondition for an unknown
  // trial).
  absl::Status PutFinal(const std::string& trial_id, int attempt,
                        std::string text, int64_t total_bytes);
  // Drops the live tails and wanted marks of every attempt of the trials
  // (their sweep was deleted; the stored logs went with it).
  void Forget(const std::vector<std::string>& trial_ids);

 private:
  struct Live {
    std::string text;
    int64_t total_bytes = 0;
    absl::Time at;
  };
  using Key = std::pair<std::string, int>;
  void DropOldLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  store::ExperimentStore* const store_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<Key, absl::Time> wanted_ ABSL_GUARDED_BY(mu_);
  std::map<Key, Live> live_ ABSL_GUARDED_BY(mu_);
};

// Cuts `text` to its last `max_bytes`, starting after a line break (unless
// that leaves nothing) and never inside a UTF-8 sequence.
std::string LastBytesAtLineStart(std::string text, size_t max_bytes);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_TRIAL_LOGS_H_
