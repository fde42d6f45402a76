// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/sweep_read_model.h
//
// The dashboard's read model: per sweep, a snapshot of its parsed summary
// rows, the incremental analysis aggregators, and a cache of response bodies,
// all keyed by the sweep's durable version.
//
// Data flows one way: the Scheduler publishes a sweep's version only after
// the commit that made it durable (coordinator/scheduler.h, SweepView), so
// rows read from the store after seeing version v are at least as new as v.
// A snapshot is built in full once, then refreshed from the scheduler's change
// log (WatchSweep), re-reading only the changed rows from the store.
//
// Thread safety: all methods are safe to call concurrently. Snapshot builds
// are serialised (one refresh per version, not one per request).
#ifndef SMOE_COORDINATOR_VIEWS_SWEEP_READ_MODEL_H_
#define SMOE_COORDINATOR_VIEWS_SWEEP_READ_MODEL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "analysis/curve_aggregator.h"
#include "coordinator/scheduler.h"
#include "coordinator/views/trial_table.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

// Trial id -> position in a snapshot's rows: the ids' 64-bit hashes with
// their positions, sorted by hash (16 bytes a row; an unordered_map of the
// id strings was about 100), the ids compared in the rows themselves.
// Immutable; shared by the snapshots of one trial set (the same ids at the
// same positions).
class TrialIndex {
 public:
  explicit TrialIndex(const RowTable& rows);
  // The position of `id` in `rows`, a table with the ids this index was
  // built from; nullopt when none.
  std::optional<size_t> Find(const RowTable& rows, absl::string_view id) const;
  size_t size() const { return by_hash_.size(); }

 private:
  static uint64_t Hash(absl::string_view id);
  std::vector<std::pair<uint64_t, uint64_t>> by_hash_;  // (hash, position)
};

// The parsed summary table of one sweep at (or after) a durable version.
// Immutable once published.
struct SweepSnapshot {
  int64_t version = -1;  // the sweep's durable version the rows reflect
  std::string kind;
  nlohmann::json defaults;  // params' defaults (SweepKind: kind command too)
  RowTable rows;  // by ordinal; chunks shared with the snapshot refreshed
  std::shared_ptr<const TrialIndex> index;  // trial id -> position
  std::map<std::string, int> metric_count;  // result name -> trials with it
  // A snapshot refreshed from another: that one's version and the positions
  // whose rows differ from it (an aggregator that saw it Set()s only
  // those). -1 and empty after a full load.
  int64_t base_version = -1;
  std::vector<size_t> changed;

  // The position of trial `id`; nullopt when the sweep has no such trial.
  std::optional<size_t> Find(absl::string_view id) const {
    if (index == nullptr) return std::nullopt;
    return index->Find(rows, id);
  }

  // Result names present in at least one row.
  std::vector<std::string> metrics() const;
};

// Keeps a CurveAggregator in step with the snapshots it is asked about.
class AggregatorEntry {
 public:
  // Brings the aggregator to `snap` (Set()s the rows that differ from the last
  // snapshot it saw: `snap->changed` when that snapshot is `snap`'s base,
  // else by pointer; all rows the first time) and runs `fn` on it under the
  // entry's lock.
  template <typename Fn>
  auto With(const std::shared_ptr<const SweepSnapshot>& snap,
            const analysis::AggregateOptions& o, Fn&& fn) {
    absl::MutexLock lock(&mu_);
    analysis::CurveAggregator& agg = At(snap, o);
    auto out = fn(agg);
    bytes_.store(agg.ApproxBytes(), std::memory_order_relaxed);
    return out;
  }

 private:
  analysis::CurveAggregator& At(
      const std::shared_ptr<const SweepSnapshot>& snap,
      const analysis::AggregateOptions& o) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::shared_ptr<const SweepSnapshot> seen_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<analysis::CurveAggregator> agg_ ABSL_GUARDED_BY(mu_);
  // agg_->ApproxBytes() after the last With() (read without mu_ by the
  // model's bound).
  std::atomic<size_t> bytes_{0};
  // The model's use counter when it was last handed out (under the model's
  // mutex): the least recently used entry is evicted first.
  uint64_t used_ = 0;
  friend class SweepReadModel;

 public:
  // The estimate of the aggregator's memory after the last With().
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
};

class SweepReadModel {
 public:
  // Neither pointer is owned; both must outlive the model. The model drops a
  // sweep's snapshot, aggregators and cached responses when the scheduler
  // deletes the sweep (Scheduler::AddSweepDeletedListener).
  SweepReadModel(Scheduler* scheduler, store::ExperimentStore* store);
  ~SweepReadModel();
  SweepReadModel(const SweepReadModel&) = delete;
  SweepReadModel& operator=(const SweepReadModel&) = delete;

  // Drops everything kept for `sweep_id`. Cache keys are
  // "<route>\x1f<sweep id>\x1f<query...>" (the HTTP routes' convention).
  void Forget(const std::string& sweep_id);
  // Entries kept (snapshots + aggregators + responses) for `sweep_id`.
  size_t EntriesOf(const std::string& sweep_id);

  // The sweep's durable view and a snapshot at (or after) its version.
  // NotFound for an unknown sweep; store errors as they come.
  absl::StatusOr<std::pair<SweepView, std::shared_ptr<const SweepSnapshot>>>
  Get(const std::string& sweep_id);

  // The aggregator for `key` (a sweep and an analysis query), created on
  // first use. The others kept are bounded by their estimated memory
  // (AggregatorEntry::bytes(), at most max_aggregator_bytes() together)
  // and by count (kMaxAggregators): the least recently used go first. The
  // one returned is kept whatever its size.
  std::shared_ptr<AggregatorEntry> Aggregator(const std::string& key);

  // The body cached for (key, version); null when none.
  std::shared_ptr<const std::string> CacheGet(const std::string& key,
                                              int64_t version);
  // Caches `body` for (key, version), replacing an older version's. At most
  // kMaxResponses are kept; beyond that all are dropped.
  void CachePut(const std::string& key, int64_t version,
                std::shared_ptr<const std::string> body);
  // Runs `fn` (producing a body) once per (key, version).
  template <typename Fn>
  std::shared_ptr<const std::string> Cached(const std::string& key,
                                            int64_t version, Fn&& fn) {
    if (auto hit = CacheGet(key, version)) return hit;
    auto body = std::make_shared<const std::string>(fn());
    CachePut(key, version, body);
    return body;
  }

  static constexpr size_t kMaxAggregators = 64;
  static constexpr size_t kMaxResponses = 512;
  // The default bound on the aggregators' memory (issue 35): an aggregator
  // holds about 48 bytes a trial (5 MB at 10^5 trials, 48 MB at 10^6), so
  // the default keeps 8 of them at 10^6 and the count bound applies below.
  static constexpr size_t kMaxAggregatorBytes = size_t{384} << 20;
  // The cached response bodies' bound (at 10^6 trials a curves body is about
  // 7 MB); beyond it the least recently stored go first.
  static constexpr size_t kMaxResponseBytes = size_t{256} << 20;
  void set_max_aggregator_bytes(size_t bytes);
  size_t max_aggregator_bytes();
  // The aggregators kept and their estimated memory (tests, benchmarks).
  size_t aggregator_count();
  size_t aggregator_bytes();

 private:
  // Reads the sweep's whole summary table.
  absl::StatusOr<std::shared_ptr<const SweepSnapshot>> Reload(
      const std::string& sweep_id);
  // Applies the trials changed since `base` to a copy of it, reading only
  // those rows. Returns nullptr when a full reload is cheaper or required
  // (log trimmed, new trials).
  absl::StatusOr<std::shared_ptr<const SweepSnapshot>> Refresh(
      const std::string& sweep_id,
      const std::shared_ptr<const SweepSnapshot>& base);
  std::shared_ptr<const SweepSnapshot> Current(const std::string& sweep_id,
                                               int64_t version);

  // True when cache key `key` belongs to `sweep_id` (see Forget).
  static bool KeyOf(const std::string& key, const std::string& sweep_id);

  Scheduler* const scheduler_;
  store::ExperimentStore* const store_;
  int listener_ = 0;
  absl::Mutex build_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const SweepSnapshot>> snapshots_
      ABSL_GUARDED_BY(mu_);
  // (sweep, query) -> (version, body)
  std::map<std::string, std::pair<int64_t, std::shared_ptr<const std::string>>>
      responses_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<AggregatorEntry>> aggregators_
      ABSL_GUARDED_BY(mu_);
  uint64_t aggregator_uses_ ABSL_GUARDED_BY(mu_) = 0;
  size_t max_aggregator_bytes_ ABSL_GUARDED_BY(mu_) = kMaxAggregatorBytes;
  uint64_t response_puts_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> response_put_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_VIEWS_SWEEP_READ_MODEL_H_
