// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/scheduler.h
//
// Scheduler is the coordinator's brain: it expands sweeps into trials, leases
// trials to workers (pull-based), tracks heartbeats and lease expiry, retries
// with separate budgets for errors and preemptions, refuses reports from stale
// attempts, and cancels. It is plain C++: no gRPC, no HTTP.
//
// Durability: every public call returns only after its state transitions are
// committed to the ExperimentStore, so a coordinator killed at any point
// restarts (Create() reloads the store) with every acknowledged transition
// intact. With `group_commit` (the default) a transition is applied in memory
// under the lock and queued; callers then wait outside the lock while one of
// them (the leader) commits everything queued in a single transaction. Batches
// commit in order, so no reply depends on state that is not yet durable. If a
// commit fails, memory is ahead of the store: the scheduler fails stop and
// answers Unavailable until it is restarted from the store. Running leases
// found on restart get a fresh lease timeout so their workers can reconnect and
// keep them.
//
// Time comes from the injected Clock: tests use FakeClock and never sleep.
//
// Thread safety: all public methods are safe to call concurrently; one mutex
// serialises them (the store is a single writer anyway).
#ifndef SMOE_COORDINATOR_SCHEDULER_H_
#define SMOE_COORDINATOR_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/search/asha_incremental.h"
#include "analysis/search/median_incremental.h"
#include "analysis/search/types.h"
#include "common/clock.h"
#include "coordinator/search_driver.h"
#include "store/experiment_store.h"
#include "sweeps/sweep_spec.h"
#include "trials/events.h"

namespace smoe::coordinator {

// CLOCK_MONOTONIC as a duration since an arbitrary origin.
absl::Duration MonotonicNow();

struct SchedulerOptions {
  // How often workers heartbeat (told to them at registration).
  absl::Duration heartbeat_interval = absl::Seconds(5);
  // A lease lapses this long after its last heartbeat; its trial is re-queued.
  absl::Duration lease_timeout = absl::Seconds(30);
  // Running leases found when the coordinator (re)starts are kept this long
  // without a heartbeat: workers in reconnect backoff (capped near 10 s) must
  // not lose finished attempts because the coordinator restarted.
  absl::Duration restart_grace = absl::Seconds(45);
  // Issue 36 item 7: leases measure time that never jumps. `monotonic`
  // returns it (the server passes CLOCK_MONOTONIC, MonotonicNow()); when the
  // wall clock steps (NTP, a VM resumed from a snapshot) every lease
  // deadline moves with it instead of expiring (or living on). Null: the
  // scheduler's clock is taken as monotonic (unit tests with a FakeClock).
  std::function<absl::Duration()> monotonic;
  // When lease expiry has not run for this long (monotonic), the coordinator
  // was paused (a VM or GC pause, SIGSTOP, a lock held too long): its workers
  // may have heartbeated into the void, so every running lease gets a fresh
  // lease_timeout instead of expiring. Infinite = off (unit tests jump the
  // clock on purpose); the server sets 5 s (it runs expiry every second).
  absl::Duration stall_grace_after = absl::InfiniteDuration();
  // Preemptions + lost leases allowed per trial before it fails (a guard
  // against a trial that kills its worker every time).
  int max_preemptions = 100;
  // Sweep-file limits.
  sweeps::ParseOptions parse;
  // Commit concurrent transitions together (see the file comment). false
  // commits each transition on its own under the lock (the benchmark's
  // baseline).
  bool group_commit = true;
  // Issue 35 item 2: plan an asha/median sweep (search_driver.h
  // PlansPerGroup) from the search groups whose trials or reports changed
  // since its last plan, not from every trial (a budgeted one until its
  // budget is spent); asha and the median rule from their maintained sorted
  // rungs / running averages, deciding only the trials a change can affect
  // (analysis/search/asha_incremental.h, median_incremental.h). false: every
  // plan from every trial (the crash-restart path always is).
  bool incremental_search = true;
  // With incremental_search: asha and the median rule maintained per
  // report (analysis/search/asha_incremental.h, median_incremental.h),
  // deciding only the trials a change can affect. false: their changed
  // groups are planned whole (the per-group plan; benchmarks' baseline).
  bool incremental_stopping = true;
  // Tests: also compute every incremental plan from every trial and fail
  // the transition (Internal, naming the difference) when the two differ.
  bool verify_search_plans = false;
};

struct StateCounts {
  int pending = 0;
  int running = 0;
  int succeeded = 0;
  int failed = 0;
  int cancelled = 0;
  int pruned = 0;  // adaptive sweeps: stopped by the search policy
  int total() const {
    return pending + running + succeeded + failed + cancelled + pruned;
  }
};

// Work done by an adaptive sweep (docs/adaptive-sweeps.md): the trial-steps
// its trials reached (succeeded: their `steps`; others: their last report of
// the search metric) against the full grid's (asha, median: every point of
// the sweep for all its steps; refine: the grid with the refined axis over
// all of `bounds`).
struct SearchUsage {
  int64_t trial_steps_used = 0;
  int64_t full_grid_trial_steps = 0;
};

// A sweep as readers see it. From GetSweep, ListSweeps and WatchSweep it is
// the sweep as the store holds it: `record`, `counts` and `version` are
// published only after the commit that made them durable, so a reader that
// gets version v and then reads the store sees at least v's rows. (A mutating
// call's own result describes the state it just committed.)
struct SweepView {
  store::SweepRecord record;
  sweeps::SweepSpec spec;
  StateCounts counts;
  int64_t version = 0;  // increases with every change to the sweep's trials
  // Why no connected worker can run the sweep's pending trials (kind,
  // labels, GPUs or slots; or no worker connected); "" when one can or
  // nothing is pending. Computed on every read, not stored.
  std::string unschedulable;
};

struct SubmitResult {
  SweepView sweep;
  int new_trials = 0;
  int existing_trials = 0;
};

// What DeleteSweep removed.
struct DeletedSweep {
  std::string sweep_id;
  std::vector<std::string> trial_ids;  // by ordinal
};

struct WorkerInfo {
  std::string worker_id;  // empty: assign one
  std::string hostname;
  int cpus = 0;
  int gpus = 0;
  int slots = 1;
  std::map<std::string, std::string> labels;
  std::vector<std::string> kinds;  // empty: {"sraven"}
};

// Bounds on what a worker registers and reports (issue 16 item 9).
inline constexpr size_t kMaxWorkerIdLength = 128;
inline constexpr size_t kMaxHostnameLength = 253;
inline constexpr int kMaxWorkerSlots = 1024;
inline constexpr int kMaxWorkerGpus = 1024;
inline constexpr int kMaxWorkerCpus = 1 << 20;
inline constexpr size_t kMaxWorkerLabels = 64;
inline constexpr size_t kMaxLabelLength = 128;
inline constexpr size_t kMaxWorkerKinds = 16;
inline constexpr size_t kMaxPausedLength = 512;
inline constexpr size_t kMaxMetricNameLength = trials::kMaxMetricNameBytes;

// OK, or InvalidArgument naming the field and (a prefix of) the value: ids,
// hostnames, label keys and kinds are 1..max characters of [A-Za-z0-9._:/-]
// (an empty worker_id or hostname is allowed: the coordinator assigns an id),
// slots 1..kMaxWorkerSlots, gpus and cpus non-negative and bounded.
absl::Status ValidateWorkerInfo(const WorkerInfo& info);
// A metric name: trials::ValidateMetricName (the worker applies the same
// rule when it parses the trainer's events).
absl::Status ValidateMetricName(absl::string_view name);

// A registered worker as the scheduler has it now (views/workers_view.h
// turns it into the workers table): its record, what the trials leased to it
// use, and their ids.
struct WorkerSnapshot {
  store::WorkerRecord record;
  int slots_used = 0;
  int gpus_used = 0;
  std::vector<std::string> trial_ids;  // leased to it, sorted
  std::string paused;  // its last heartbeat's reason to lease nothing
};

struct Registration {
  std::string worker_id;
  absl::Duration heartbeat_interval;
  absl::Duration lease_timeout;
};

struct LeaseGrant {
  std::string trial_id;
  std::string sweep_id;
  int attempt = 0;
  std::string kind;
  int64_t seed = 0;
  std::string params_json;
  int gpus = 0;
  int ep_size = 1;
  absl::Time lease_expires_at;
  int slots = 1;  // worker slots the attempt occupies (resources.slots)
  int progress_timeout_s = sweeps::kDefaultProgressTimeoutS;  // resources.*
  // kind command: the program, and {name: default} of the declared params
  // (the worker fills them in; docs/trainer-protocol.md).
  sweeps::CommandSpec command;
  std::string defaults_json;
  bool keep_final_checkpoint = false;  // the sweep's keep_final_checkpoint
};

struct RunningReport {
  std::string trial_id;
  int attempt = 0;
};

struct HeartbeatReply {
  // Attempts the worker must kill: no longer leased to it (cancelled, expired
  // and re-leased, or unknown).
  std::vector<std::pair<std::string, int>> cancel;
  bool drain = false;
};

// kHung: the worker killed a trainer that missed its progress deadline; it
// consumes the error budget like kError, recorded as AttemptOutcome::kHung.
enum class FailReason { kError, kPreempted, kBadSpec, kCancelled, kHung };

struct WatchResult {
  SweepView sweep;
  std::vector<store::TrialRecord> changed;  // trials changed since `since`
  bool timed_out = false;
};

class Scheduler {
 public:
  // Loads all state from `store`. Neither pointer is owned; both must outlive
  // the scheduler.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      store::ExperimentStore* store, Clock* clock, SchedulerOptions options);

  // ---- user API -------------------------------------------------------------

  // Parses `yaml`, expands it and creates the sweep. Re-submitting a sweep with
  // the same name merges: points already present are kept (never duplicated),
  // new ones are added, nothing is deleted. `dry_run` validates and counts
  // only. InvalidArgument names the bad field; FailedPrecondition when the
  // kind differs from the existing sweep's.
  absl::StatusOr<SubmitResult> SubmitSweep(const std::string& yaml,
                                           bool dry_run);
  std::vector<SweepView> ListSweeps();
  absl::StatusOr<SweepView> GetSweep(const std::string& sweep_id);
  // Returns the sweep's trials by ordinal.
  absl::StatusOr<std::vector<store::TrialRecord>> ListTrials(
      const std::string& sweep_id);
  // Cancels pending and running trials; running attempts are killed through
  // the workers' next heartbeat. Returns the number of trials cancelled.
  absl::StatusOr<int> CancelSweep(const std::string& sweep_id);
  // Re-queues failed trials (and cancelled ones when asked) with fresh budgets.
  absl::StatusOr<int> RetrySweep(const std::string& sweep_id,
                                 bool include_cancelled);
  // Adds values to an axis (or "seeds"); returns the number of new trials.
  absl::StatusOr<int> ExtendSweep(const std::string& sweep_id,
                                  const std::string& axis,
                                  const std::vector<nlohmann::json>& values);
  // Waits until a change past version `since` is durable or `timeout` passes
  // (real time). Returns the sweep (as durable) and the trials changed since
  // `since` up to its version (the records as the scheduler has them now).
  absl::StatusOr<WatchResult> WatchSweep(const std::string& sweep_id,
                                         int64_t since, absl::Duration timeout);
  // Adaptive sweeps: trial-steps used against the full grid's. NotFound for
  // an unknown sweep; zeros for a grid sweep.
  absl::StatusOr<SearchUsage> GetSearchUsage(const std::string& sweep_id);

  // The search plans' own cost, every adaptive sweep together: plans taken
  // and their wall time (taking the plan: the index, the incremental or
  // full plan; not mirroring the batch, not the verify_search_plans
  // oracle, not applying the plan). Benchmarks read it around a call.
  struct SearchPlanTiming {
    int64_t plans = 0;
    absl::Duration total;
  };
  SearchPlanTiming GetSearchPlanTiming();
  // Marks a worker draining: it gets `drain` in its next heartbeat reply.
  absl::Status DrainWorker(const std::string& worker_id);
  // Every registered worker (in memory: a heartbeat's time may not be durable
  // yet), by id.
  std::vector<WorkerSnapshot> ListWorkers();

  // ---- dashboard actions (scheduler_actions.cc) -----------------------------
  // Cancels one pending or running trial (a running attempt is killed through
  // its worker's next heartbeat). FailedPrecondition naming the state for a
  // finished trial; NotFound for an unknown one.
  absl::Status CancelTrial(const std::string& trial_id);
  // Re-queues one failed or cancelled trial with fresh budgets.
  // FailedPrecondition naming the state otherwise, or when its sweep is
  // cancelled (retry the sweep instead).
  absl::Status RetryTrial(const std::string& trial_id);
  // Sets the fields of `a` that are present on the sweep's record (notes at
  // most 8 KiB; at most 32 tags of 1..64 characters of [A-Za-z0-9._:+-]).
  // InvalidArgument naming the field and value.
  struct SweepAnnotation {
    std::optional<std::string> notes;
    std::optional<std::vector<std::string>> tags;
    std::optional<bool> archived;
  };
  absl::StatusOr<SweepView> AnnotateSweep(const std::string& sweep_id,
                                          const SweepAnnotation& a);
  // Deletes a finished sweep and all its rows in one store transaction
  // (store::WriteBatch::deleted_sweeps), and drops it from memory: its
  // trials, search state and change log; WatchSweep calls waiting on it
  // return NotFound. Refused with FailedPrecondition naming the sweep and its
  // pending and running trials while it has any (cancel it first: a delete
  // never races a worker's report). NotFound naming an unknown sweep. The
  // caller removes what lives outside the store (checkpoint blobs, caches).
  // A sweep later submitted under the same name is a new sweep whose
  // versions continue above the deleted one's, so caches keyed by (sweep,
  // version) never serve the old sweep's data.
  absl::StatusOr<DeletedSweep> DeleteSweep(const std::string& sweep_id);
  // Calls `fn` after every successful DeleteSweep (once the delete is
  // durable, outside the scheduler's locks, before DeleteSweep returns), so
  // what keeps per-sweep state outside the store drops it whichever API
  // deleted the sweep: checkpoint blobs, live log tails, the dashboard's
  // caches. Listeners run one at a time and must not add or remove
  // listeners. Returns an id for RemoveSweepDeletedListener, which returns
  // once no call of that listener is running.
  using SweepDeletedListener = std::function<void(const DeletedSweep&)>;
  int AddSweepDeletedListener(SweepDeletedListener fn);
  void RemoveSweepDeletedListener(int id);

  // ---- worker API -----------------------------------------------------------

  absl::StatusOr<Registration> Register(const WorkerInfo& info);
  // Leases up to `free_slots` trials whose kind the worker runs and whose GPU
  // needs fit in `free_gpus`, by sweep priority, then fairness (sweeps with
  // fewer running trials first), then ordinal; never a trial that the
  // worker's last heartbeat still reported under an older attempt (it is
  // stopping there). NotFound for an unknown worker (it must re-register).
  absl::StatusOr<std::vector<LeaseGrant>> Lease(const std::string& worker_id,
                                                int free_slots, int free_gpus);
  // Extends the leases of the reported attempts that are still the worker's.
  // `paused`: why the worker leases nothing for now ("" while it leases;
  // kept in memory for the workers table, cut to kMaxPausedLength).
  absl::StatusOr<HeartbeatReply> Heartbeat(
      const std::string& worker_id, const std::vector<RunningReport>& running,
      bool draining, const std::string& paused = "");
  // Stores metrics of a current attempt. FailedPrecondition for a stale
  // attempt (nothing written).
  absl::Status ReportMetrics(const std::string& worker_id,
                             const std::string& trial_id, int attempt,
                             const std::vector<store::MetricRecord>& metrics);
  // Ends a current attempt successfully and stores its results.
  // FailedPrecondition for a stale attempt; InvalidArgument for a duration_s
  // that is not a finite number >= 0 (nothing written either way).
  absl::Status Complete(const std::string& worker_id,
                        const std::string& trial_id, int attempt,
                        const std::map<std::string, double>& results,
                        double duration_s);
  absl::Status Fail(const std::string& worker_id, const std::string& trial_id,
                    int attempt, FailReason reason, int exit_code,
                    const std::string& message);

  // OK when `attempt` of `trial_id` is running on `worker_id` (what
  // ReportMetrics requires); FailedPrecondition for a stale attempt, NotFound
  // for an unknown trial. Reads only (checkpoint uploads and downloads).
  absl::Status CheckCurrentAttempt(const std::string& worker_id,
                                   const std::string& trial_id, int attempt);

  // Re-queues trials whose lease lapsed. Called by the server every second and
  // at the start of every Lease().
  absl::Status ExpireLeases();

  // True after a store commit failed (a full disk): the scheduler is
  // fail-stopped, every mutation is refused with Unavailable (nothing
  // acknowledged is lost) until Recover() succeeds.
  bool failed() const { return failed_flag_.load(); }
  // After a failed commit: reloads the in-memory state from the store, as a
  // restart would, and accepts mutations again. Changes that were applied in
  // memory but never committed are dropped; their callers got an error. Call
  // once the store can commit again (the server probes it first). OK and a
  // no-op when not failed; the store's error when reloading fails (still
  // failed then).
  absl::Status Recover();
  // Fail-stops the scheduler as a failed commit would (`why`: Unavailable
  // returned to every mutation); e.g. the store's file is gone.
  void FailStop(const absl::Status& why);

  const SchedulerOptions& options() const { return options_; }
  absl::Time Now() const { return clock_->Now(); }
  // Number of group commits so far (for benchmarks).
  int64_t group_commits();

 private:
  // What readers see of a sweep: its state as of the last durable commit.
  struct DurableSweep {
    bool exists = false;  // false until the sweep's first commit is durable
    int64_t version = 0;
    store::SweepRecord record;
    StateCounts counts;
  };
  struct SweepEntry {
    // Which sweep of this name (a deleted sweep's name may be reused):
    // unique per scheduler, kept across Recover().
    uint64_t incarnation = 0;
    store::SweepRecord record;
    sweeps::SweepSpec spec;
    std::vector<std::string> trial_ids;  // index = ordinal
    std::set<int64_t> pending;           // ordinals of pending trials
    StateCounts counts;
    int64_t version = 0;  // in memory: may be ahead of the store
    std::deque<std::pair<int64_t, std::string>> changes;  // (version, trial)
    DurableSweep durable;
    // Adaptive sweeps (search_driver.h), mirrored from the store: the search
    // metric's reports per trial, refine's final values, and the last
    // logged decision per trial / group.
    // (Hashed: a report looks its trial up twice, and a sweep-wide ordered
    // map of 10^6 ids costs ~20 cache-missing string compares a lookup;
    // nothing iterates it in order: the policies sort their inputs.)
    std::unordered_map<std::string, std::vector<analysis::search::Report>>
        reports;
    std::unordered_map<std::string, double> finals;
    std::unordered_map<std::string, LoggedDecision> last;
    // search.budget_gpu_hours set: the device-hours of the sweep's ended
    // attempts (wall time x max(1, gpus_per_trial), as views/search_summary.h).
    double ended_device_hours = 0;
    // Incremental search planning (SchedulerOptions::incremental_search):
    // per trial its parsed search facts, per group its trial ids (by
    // ordinal), the trials changed since the last plan and the sweep's
    // SearchMaxSteps. Built by a plan from every trial; dropped when a trial
    // is added (the next plan rebuilds it).
    bool search_indexed = false;
    std::unordered_map<std::string, SearchTrialInfo> search_info;
    std::map<std::string, std::vector<std::string>> search_groups;
    std::set<std::string> search_dirty;
    int64_t search_max_steps = 1;
    // Asha (any configuration): its rungs' sorted unit values per group,
    // updated from the changed trials and reports; a plan
    // decides only the trials whose decision may have changed (issue 35).
    // Built with the index.
    std::shared_ptr<analysis::search::IncrementalAsha> asha;
    // The median rule: per group and report step the sorted running
    // averages and the judged trials' bests, updated likewise
    // (analysis/search/median_incremental.h). Built with the index.
    std::shared_ptr<analysis::search::IncrementalMedian> median;
    // Refine (docs/adaptive-sweeps.md "Incremental refine"): per group its
    // points' trials (sorted ids), their points as refine last saw them and
    // the group's decision before the sweep's budget; the groups that want
    // proposals; the sweep's distinct points. A plan recomputes the points
    // of the trials it touches (changed, stopping decision changed),
    // re-decides the groups where one differs, and grants over the kept
    // decisions. Built with the index (with `asha` for early_stop: asha,
    // over the stopping groups); started from the plan from every trial.
    struct RefineIndex {
      struct Group {
        std::vector<std::string> ids;  // trials with an integer axis value
        std::vector<analysis::search::RefinePoint> points;  // ids' points
        analysis::search::RefineGroupPlan plan;
        bool planned = false;  // `plan` taken (and counted in `points`)
      };
      std::unordered_map<std::string, Group> groups;
      // Groups whose points are rebuilt whole by the next plan (a new index,
      // a trial that joined).
      std::set<std::string> rebuild;
      std::set<std::string> wanting;  // groups with proposals
      int64_t points = 0;             // sum of the planned groups' points
      // Adds trial `id` (axis value `x`, seed) to group `label`'s trials.
      void Join(const std::string& label, const std::string& id, int64_t x,
                int64_t seed);
    };
    std::shared_ptr<RefineIndex> refine;
  };
  struct CapturedSweep {
    std::string sweep_id;
    uint64_t incarnation = 0;
    DurableSweep durable;
  };
  using Captured = std::vector<CapturedSweep>;
  struct WorkerEntry {
    store::WorkerRecord record;
    std::set<std::string> leased;  // trial ids running on it
    // Trials its last heartbeat reported under an attempt that is no longer
    // its own (told to cancel; the trainer may still be stopping in the
    // trial's directory). Not leased to it again until a heartbeat without
    // them. Memory only.
    std::set<std::string> stopping;
    // Its last heartbeat's `paused` (why it leases nothing). Memory only.
    std::string paused;
  };

  Scheduler(store::ExperimentStore* store, Clock* clock,
            SchedulerOptions options);
  absl::Status Load();
  // Load's body. `min_versions` (Recover): each sweep's version before the
  // reload; reloaded sweeps get a newer one so watchers see the change.
  absl::Status LoadLocked(const std::map<std::string, int64_t>* min_versions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Runs `fn` under mu_, then waits until everything it queued is durable.
  // R is absl::Status or absl::StatusOr<T>.
  template <typename R, typename Fn>
  R Mutate(Fn&& fn) ABSL_LOCKS_EXCLUDED(mu_, commit_mu_) {
    if (failed_flag_.load()) {
      absl::MutexLock lock(&commit_mu_);
      return failed_;
    }
    uint64_t ticket = 0;
    R result = [&]() {
      absl::MutexLock lock(&mu_);
      R r = fn();
      ticket = last_ticket_;
      // Synchronous mode: what fn applied is committed already.
      if (!options_.group_commit) PublishLocked(CaptureLocked());
      return r;
    }();
    absl::Status durable = WaitDurable(ticket);
    if (!durable.ok()) return durable;
    return result;
  }
  // Commits `batch` now (group_commit off) or queues it (on).
  absl::Status EnqueueLocked(const store::WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns once every batch up to `ticket` is committed (leading the commit
  // when no one else is), or the failure that stopped the scheduler.
  absl::Status WaitDurable(uint64_t ticket)
      ABSL_LOCKS_EXCLUDED(mu_, commit_mu_);

  // `spec` and `points` are `yaml` parsed and expanded (off the lock).
  absl::StatusOr<SubmitResult> SubmitSweepLocked(
      const std::string& yaml, const sweeps::SweepSpec& spec,
      const std::vector<sweeps::ExpandedTrial>& points, bool dry_run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> CancelSweepLocked(const std::string& sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> RetrySweepLocked(const std::string& sweep_id,
                                       bool include_cancelled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> ExtendSweepLocked(
      const std::string& sweep_id, const std::string& axis,
      const std::vector<nlohmann::json>& values)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CancelTrialLocked(const std::string& trial_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RetryTrialLocked(const std::string& trial_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<SweepView> AnnotateSweepLocked(const std::string& sweep_id,
                                                const SweepAnnotation& a)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<DeletedSweep> DeleteSweepLocked(const std::string& sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The slots and GPUs of the trials leased to `worker`.
  std::pair<int, int> UsedByLocked(const WorkerEntry& worker) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status DrainWorkerLocked(const std::string& worker_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Registration> RegisterLocked(const WorkerInfo& info)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<LeaseGrant>> LeaseLocked(
      const std::string& worker_id, int free_slots, int free_gpus)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<HeartbeatReply> HeartbeatLocked(
      const std::string& worker_id, const std::vector<RunningReport>& running,
      bool draining, const std::string& paused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReportMetricsLocked(
      const std::string& worker_id, const std::string& trial_id, int attempt,
      const std::vector<store::MetricRecord>& metrics)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CompleteLocked(const std::string& worker_id,
                              const std::string& trial_id, int attempt,
                              const std::map<std::string, double>& results,
                              double duration_s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FailLocked(const std::string& worker_id,
                          const std::string& trial_id, int attempt,
                          FailReason reason, int exit_code,
                          const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Returns the sweep, or NotFound naming it.
  absl::StatusOr<SweepEntry*> FindSweepLocked(const std::string& sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Like FindSweepLocked, but NotFound until the sweep's creation is durable.
  absl::StatusOr<SweepEntry*> FindDurableSweepLocked(
      const std::string& sweep_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits `batch` (or queues it), then applies its sweeps/trials/workers to
  // memory.
  absl::Status CommitAndApplyLocked(const store::WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyTrialLocked(store::TrialRecord next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the state of every sweep changed since the last capture. Called
  // with the batches it belongs to (the leader's swap of queue_, or a
  // synchronous commit), so it describes exactly what they commit.
  Captured CaptureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes captured state visible to readers (after its commit is durable)
  // and wakes WatchSweep.
  void PublishLocked(Captured captured) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<store::TrialRecord*> CurrentAttemptLocked(
      const std::string& worker_id, const std::string& trial_id, int attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the current attempt of `trial` with `outcome`, moving the trial to
  // `next_state`; appends the writes to `batch`.
  void EndAttemptLocked(const store::TrialRecord& trial,
                        store::AttemptOutcome outcome,
                        store::TrialState next_state, int exit_code,
                        const std::string& message, store::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ExpireLeasesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SweepView::unschedulable for `s` (see there).
  std::string UnschedulableLocked(const SweepEntry& s) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sweep as in memory (a mutation's own result).
  SweepView ViewLocked(const SweepEntry& s) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sweep as durable (what readers see).
  SweepView DurableViewLocked(const SweepEntry& s) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adaptive sweeps: fills the search mirrors of `s` from the store.
  absl::Status LoadSearchLocked(SweepEntry* s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adaptive sweeps: records `batch`'s search-metric reports and results of
  // `s`'s trials in the search mirrors.
  void MirrorSearchLocked(SweepEntry* s, const store::WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adaptive sweeps: records `batch`'s search-metric reports and results in
  // the mirrors, computes the search plan on the state `batch` leads to and
  // appends it (state changes, new points, decisions) to `batch`, so the
  // decision commits with what caused it. A no-op for grid sweeps.
  absl::Status PlanSearchLocked(SweepEntry* s, store::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PlanSearchLocked's inputs: every trial of `s` with `batch`'s overlaid
  // (`*index`: trial id -> position in `in->trials`), or, when `s` is
  // indexed for incremental planning and `allow_subset`, only the trials of
  // the groups with a trial in `batch` or changed since the last plan (the
  // changed set is then cleared). Returns whether the inputs are such a
  // subset. A plan from every trial (re)builds the index when allowed.
  // PlanSearchLocked for a sweep with `s->asha` or `s->median` (indexed):
  // updates it from the trials and reports changed since the last plan and
  // in `batch`, and plans the trials whose decision may have changed. False
  // (nothing done) when a changed trial is not in the index: the caller plans
  // from every trial, which re-indexes. `in->trials` (and `index`): those
  // trials.
  // The incremental plans' changes: the trials of `s` changed since its
  // last plan (s->search_dirty, cleared) or by `batch` (trial records,
  // search-metric reports, results), and `batch`'s last record of each
  // trial it holds. Record(id): that record, else the scheduler's.
  struct SearchChanges {
    std::set<std::string> ids;
    std::map<std::string, const store::TrialRecord*> overlay;
    const std::unordered_map<std::string, store::TrialRecord>* trials = nullptr;
    const store::TrialRecord& Record(const std::string& id) const {
      auto it = overlay.find(id);
      return it != overlay.end() ? *it->second : trials->at(id);
    }
  };
  // False (the caller plans from every trial) when incremental planning is
  // off or `s` is not indexed, its GPU-hour budget may be spent (a spent
  // budget settles every group), or a trial of `batch` is not in the index.
  bool TakeSearchChangesLocked(SweepEntry* s, const store::WriteBatch& batch,
                               SearchChanges* changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IncrementalStoppingPlanLocked(SweepEntry* s,
                                     const store::WriteBatch& batch,
                                     SearchInputs* in,
                                     std::map<std::string, size_t>* index,
                                     SearchPlan* plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PlanSearchLocked for a refine sweep with `s->refine` (indexed): the
  // early stopping (early_stop: asha) of the changed trials as above, then
  // refine's decision re-taken for the groups whose points changed and the
  // proposals granted over every group's kept decision. False (nothing
  // done) when the GPU-hour budget may be spent or a trial of `batch` is
  // not in the index: the caller plans from every trial.
  bool IncrementalRefinePlanLocked(SweepEntry* s,
                                   const store::WriteBatch& batch,
                                   SearchInputs* in,
                                   std::map<std::string, size_t>* index,
                                   SearchPlan* plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool SearchInputsLocked(SweepEntry* s, const store::WriteBatch& batch,
                          bool allow_subset, SearchInputs* in,
                          std::map<std::string, size_t>* index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Builds the incremental-planning index of `s` from `trials` (every trial
  // of the sweep, batch overlaid).
  void IndexSearchLocked(SweepEntry* s,
                         const std::vector<store::TrialRecord>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // search.budget_gpu_hours set and (nearly: within 1e-9 relative, so that
  // a different summation order cannot disagree with DeviceHoursLocked) spent
  // by the state `batch` leads to: the ended attempts' hours (mirrored) and
  // the sweep's running trials' (running_, `batch` overlaid), O(running
  // trials) instead of O(sweep). Incremental plans need it false.
  bool BudgetMaybeSpentLocked(const SweepEntry& s,
                              const store::WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The device-hours `s` has used: its ended attempts' (mirrored) and each
  // running trial of `trials` from its lease until now.
  double DeviceHoursLocked(const SweepEntry& s,
                           const std::vector<store::TrialRecord>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PlanSearchLocked for every sweep with a trial in `batch`.
  absl::Status PlanSearchForBatchLocked(store::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddTrialsLocked(SweepEntry* sweep,
                               const std::vector<sweeps::ExpandedTrial>& points,
                               store::WriteBatch* batch, int* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  store::ExperimentStore* const store_;
  Clock* const clock_;
  const SchedulerOptions options_;

  absl::Mutex mu_;
  SearchPlanTiming plan_timing_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, SweepEntry> sweeps_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, store::TrialRecord> trials_
      ABSL_GUARDED_BY(mu_);
  std::set<std::string> running_ ABSL_GUARDED_BY(mu_);
  // The wall and monotonic clocks at the last lease-expiry check.
  absl::Time expiry_wall_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration expiry_mono_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerEntry> workers_ ABSL_GUARDED_BY(mu_);
  int64_t worker_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Group commit: batches applied in memory, not yet committed, in order.
  std::vector<store::WriteBatch> queue_ ABSL_GUARDED_BY(mu_);
  // Sweeps changed in memory since the last CaptureLocked().
  std::set<std::string> uncaptured_ ABSL_GUARDED_BY(mu_);
  uint64_t last_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t incarnations_ ABSL_GUARDED_BY(mu_) = 0;
  // Deleted sweeps' last versions: a sweep re-created under the name starts
  // above it (memory only; a restart rebuilds every cache anyway).
  std::map<std::string, int64_t> deleted_versions_ ABSL_GUARDED_BY(mu_);

  absl::Mutex commit_mu_ ABSL_ACQUIRED_AFTER(mu_);
  absl::CondVar commit_cv_;
  uint64_t durable_ticket_ ABSL_GUARDED_BY(commit_mu_) = 0;
  bool leader_active_ ABSL_GUARDED_BY(commit_mu_) = false;
  int64_t group_commits_ ABSL_GUARDED_BY(commit_mu_) = 0;
  absl::Status failed_ ABSL_GUARDED_BY(commit_mu_);
  // Tickets (first exclusive, last inclusive) whose batches were dropped by
  // Recover(): never durable, whatever durable_ticket_ says later.
  std::vector<std::pair<uint64_t, uint64_t>> lost_tickets_
      ABSL_GUARDED_BY(commit_mu_);
  std::atomic<bool> failed_flag_{false};

  absl::Mutex listeners_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<int, SweepDeletedListener> deleted_listeners_
      ABSL_GUARDED_BY(listeners_mu_);
  int next_listener_ ABSL_GUARDED_BY(listeners_mu_) = 0;
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_SCHEDULER_H_
