// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/worker_daemon.h
//
// The per-host worker daemon's logic, free of gRPC, fork and real time: it
// takes a GatewayClient (the coordinator), a ProcessLauncher (the trainer
// processes, started as a launch::RankGroup) and a Clock, so unit tests drive
// it step by step with fakes.
//
// One loop iteration (RunOnce) does, in order:
//   1. (re-)register when not registered (same worker_id after a NotFound);
//   2. read every trainer's JSONL stdout (docs/trainer-protocol.md): `metric`
//      events are batched, `result` is kept for Complete (`progress` is
//      only the trainer's own log); reap trainers that exited and turn the
//      exit into a report:
// clang-format off
//        result + exit 0          -> Complete(duration)
//        exit 75                  -> Fail(PREEMPTED)
//        exit 64                  -> Fail(BAD_SPEC)
//        after CANCEL             -> Fail(CANCELLED)
//        other exit / signal      -> Fail(ERROR, 128+sig, stderr tail)
//        exit 0 without result    -> Fail(ERROR, "no result event")
//        while draining, any error exit -> Fail(PREEMPTED)
//        killed for the progress deadline -> Fail(HUNG, 128+9)
// clang-format on
//      SIGKILLs trainers whose SIGTERM grace has passed;
//   3. flushes metric batches (every metrics_flush_interval or
//      metrics_flush_count metrics, and always before the attempt's
//      Complete/Fail);
//   4. heartbeats when due (interval from Register, default 5 s) and obeys the
//      reply: CANCEL -> SIGTERM, SIGKILL after cancel_grace; drain -> Drain;
//   5. delivers the outbox (journal.h) in order until acknowledged; a
//      FAILED_PRECONDITION reply counts as acknowledged (the attempt is
//      stale; dropped with a warning). A report refused for its content
//      (INVALID_ARGUMENT at once; INTERNAL, UNKNOWN or RESOURCE_EXHAUSTED 3
//      times in a row while heartbeats succeed) is sent again without its
//      log tail, and a Complete whose result is refused becomes
//      Fail(ERROR) naming the refusal: no report blocks the ones behind it
//      for longer than a few backoffs (issue 36 item 1);
//   6. leases up to the free slots/GPUs when not draining; a lease for a
//      trial whose earlier attempt is still stopping here (cancel grace) is
//      handed back at once as Fail(PREEMPTED).
// An UNAVAILABLE / DEADLINE_EXCEEDED (or other transient) reply pauses all
// calls for an exponential backoff with jitter (backoff_initial doubling up to
// backoff_max); trainers keep running meanwhile. NOT_FOUND means the
// coordinator forgot this worker: re-register with the same id.
//
// Drain (SIGTERM to the daemon, or the coordinator's drain): lease nothing
// more, heartbeat with draining=true, SIGTERM every trainer, SIGKILL those
// still alive after `grace`, report them, try to deliver the outbox for up to
// drain_flush_timeout (what is left stays journaled for the next start), then
// done() becomes true and Run() returns.
//
// Hung trainers: rank 0 must print an event (any trials/events.h line:
// progress, metric, checkpoint, result) at least every
// lease.progress_timeout_s (the sweep's resources.progress_timeout_s; 0 =
// options.default_progress_timeout), counted from the start and from each
// event. A trainer that misses it (SIGSTOP, a deadlock, a collective that
// never returns) gets SIGKILL on every rank's process group at once: a silent
// trainer cannot be trusted to checkpoint, and its last checkpoint on disk is
// durable (written atomically). The attempt is reported as Fail(HUNG):
// error-like, it uses the sweep's `retries` budget (a deadlock is usually
// deterministic; a preemption-like report would retry it forever), and the
// next attempt resumes from the last checkpoint. Not checked while the
// attempt is already stopping (cancel, drain).
//
// Trial directory: <work_dir>/trials/<trial_id with '/' -> '_'>, reused by
// every attempt (the trainer resumes from its checkpoint there); TRIAL.json is
// rewritten for each attempt.
//
// A full or failing work dir (issue 36): every write the daemon makes under
// it (the journal of reports, TRIAL.json and params.json, the metric
// history, trial directories) returns an absl::Status; none stops the
// daemon. The first failure (or less than min_free_bytes free before a
// lease) pauses leasing and logs it once (ERROR, naming the file and the
// errno); reports the journal could not take are kept in memory and
// delivered as usual (journal.h). Every disk_probe_interval the daemon
// writes, syncs and removes a min_free_bytes file in the work dir and
// journals what it holds in memory; once both succeed it logs that the work
// dir is writable again and leases again. Meanwhile: a lease it cannot
// prepare, or whose checkpoint download landed while the disk is full, is
// handed back (Fail(PREEMPTED): no error budget, the coordinator leases it
// to another worker); an attempt whose trainer fails while the work dir is
// full is handed back the same way, its message starting with "worker's
// work dir is full" and the trainer's own first error line. Running trials
// go on. The heartbeat has no field for this state (HeartbeatRequest holds
// only `draining`), so the coordinator sees the worker as idle.
//
// Checkpoints outlive the worker (checkpoint_sync.h): each checkpoint event's
// file is uploaded to the coordinator by a background thread; before an
// attempt starts, a newer stored checkpoint (the lease's checkpoint_step) is
// downloaded and verified into the trial directory, on a thread of its own:
// meanwhile the attempt holds its slots and GPUs and is listed in heartbeats,
// and the loop goes on (other attempts' output, heartbeats, reports); its
// trainer starts at the first step after the download returns. A cancel or a
// drain in between hands the lease back (cancelled / preempted) without
// starting it; the drain waits for the download (it has a deadline). An attempt
// that ends preempted (exit 75, drain) is reported only after its last
// checkpoint's upload finished or `grace` passed, so the next attempt,
// anywhere, resumes from it. Outcomes become trial metrics:
// checkpoint/uploaded, checkpoint/upload_refused (value = bytes),
// checkpoint/downloaded, checkpoint/download_corrupt.
//
// Ranks: every attempt is a launch::RankGroup (worker/launch/rank_group.h) of
// max(1, ep_size) `smoe-trainer run` processes: SMOE_RANK, SMOE_WORLD_SIZE and
// SMOE_RENDEZVOUS=<trial dir>/ep-rendezvous (a FileStore) when ep_size > 1,
// CUDA_VISIBLE_DEVICES split over the trial's GPUs ("" for a trial without
// GPUs), the group's stop policy with `grace`. Only rank 0's events are used;
// the attempt ends when every rank has exited, with the group's decisive exit.
#ifndef SMOE_WORKER_DAEMON_WORKER_DAEMON_H_
#define SMOE_WORKER_DAEMON_WORKER_DAEMON_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/smoe.pb.h"
#include "worker/daemon/attempt_log.h"
#include "worker/daemon/checkpoint_sync.h"
#include "worker/daemon/gateway_client.h"
#include "worker/daemon/journal.h"
#include "worker/daemon/system_stats.h"
#include "worker/launch/process_launcher.h"
#include "worker/launch/rank_group.h"

namespace smoe::worker {

struct WorkerDaemonOptions {
  // Worker id to register with; empty = reuse <work_dir>/worker_id if present,
  // else let the coordinator assign one (then saved to <work_dir>/worker_id).
  std::string worker_id;
  std::string hostname;
  int cpus = 1;
  std::vector<int> gpu_indices;  // GPUs this worker may hand out
  int slots = 1;                 // concurrent trials (each takes one slot)
  std::map<std::string, std::string> labels;
  std::vector<std::string> kinds = {"sraven"};
  // REQUIRES: non-empty unless `kinds` is only "command" (not checked for
  // existence).
  std::string trainer_path;
  std::string work_dir;  // REQUIRES: non-empty; created if missing
  // --allow-command: the only directories whose programs kind-command trials
  // may run (command_launch.h); empty: none. Register "command" in `kinds`
  // to be leased them.
  std::vector<std::string> allowed_command_dirs;
  // Drain: SIGTERM -> SIGKILL; also the rank group's grace (rank_group.h).
  absl::Duration grace = absl::Seconds(30);
  absl::Duration cancel_grace =
      absl::Seconds(10);  // CANCEL: SIGTERM -> SIGKILL
  absl::Duration lease_interval = absl::Seconds(1);  // lease polling when idle
  absl::Duration metrics_flush_interval = absl::Seconds(1);
  int metrics_flush_count = 256;
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(10);
  absl::Duration drain_flush_timeout = absl::Seconds(10);
  // Progress deadline for a lease without one (progress_timeout_s 0, an
  // older coordinator): see the file comment, "Hung trainers".
  absl::Duration default_progress_timeout = absl::Seconds(1800);
  // Upload checkpoints to the coordinator and download them before an
  // attempt (worker/daemon/checkpoint_sync.h).
  bool checkpoint_sync = true;
  // Shared-filesystem mode: copy checkpoints to/from this directory (every
  // worker mounts it) instead of the coordinator; empty = the coordinator.
  std::string checkpoint_dir;
  // Attempt logs (attempt_log.h): bytes per file before it rotates.
  int64_t log_max_bytes = AttemptLog::kDefaultMaxBytes;
  // System metrics (system_stats.h) sent with each heartbeat; `proc_root`
  // is where the processes are read (tests point it elsewhere).
  bool system_metrics = true;
  std::string proc_root = "/proc";
  // Opens the GPU monitor for the first GPU trial (null: GPU figures are
  // absent). Default OpenNvml; tests pass a fake so the GPU branch runs on
  // CPU-only machines.
  std::function<std::unique_ptr<GpuMonitor>()> open_gpu_monitor = OpenNvml;
  // Full work dir (see the file comment): leasing pauses while less than
  // this is free (statvfs) or after a write failed, until a probe file of
  // this size can be written and synced; probed every disk_probe_interval.
  int64_t min_free_bytes = int64_t{1} << 20;
  absl::Duration disk_probe_interval = absl::Seconds(1);
  absl::Duration tick = absl::Milliseconds(100);  // Run(): pause between steps
  uint64_t jitter_seed = 0;                       // 0 = random
};

class WorkerDaemon {
 public:
  // Creates the work directory and opens the journal (<work_dir>/journal.jsonl)
  // whose unacknowledged reports will be replayed. The pointers must outlive
  // the daemon. Errors: InvalidArgument for missing options, Internal/
  // PermissionDenied for the work directory or journal.
  static absl::StatusOr<std::unique_ptr<WorkerDaemon>> Create(
      GatewayClient* gateway, launch::ProcessLauncher* launcher, Clock* clock,
      WorkerDaemonOptions options);
  ~WorkerDaemon();

  // Runs RunOnce() and sleeps `tick` on the clock until done(). Returns OK
  // after a drain; an error only for a local failure that stops the daemon
  // (the journal cannot be written).
  absl::Status Run();

  // One step of the loop (see the file comment). Never sleeps; blocks only in
  // gateway calls (each has a deadline). Returns a local, fatal error only.
  absl::Status RunOnce();

  // Starts a drain at the next step. Thread- and async-signal-safe.
  void RequestDrain() { drain_requested_.store(true); }

  // True once a drain has finished (every trainer reported).
  bool done() const { return done_; }
  bool draining() const { return draining_; }
  bool registered() const { return registered_; }
  const std::string& worker_id() const { return worker_id_; }
  // Attempts whose trainer is still running.
  int running_count() const { return static_cast<int>(trials_.size()); }
  // Leased attempts whose stored checkpoint is still downloading (their
  // trainer starts when it lands).
  int restoring_count() const { return static_cast<int>(restoring_.size()); }
  // Reports not yet acknowledged by the coordinator.
  size_t pending_reports() const { return outbox_->size(); }
  // Directory of a trial's attempts.
  std::string TrialDir(const std::string& trial_id) const;
  // OK, or why the work dir cannot be written (leasing is paused).
  const absl::Status& disk_error() const { return disk_error_; }

 private:
  struct Trial {
    v1::TrialLease lease;
    std::unique_ptr<launch::RankGroup> ranks;
    std::vector<int> gpus;
    absl::Time started;
    std::vector<v1::Metric> metrics;  // not yet flushed
    std::string dir;                  // the trial's work dir (all attempts)
    absl::Time last_flush;
    std::optional<std::map<std::string, double>> result;
    bool cancel_requested = false;
    absl::Duration progress_timeout;  // see "Hung trainers"
    absl::Time last_event;            // start, then rank 0's last event
    bool hung = false;                // killed for the progress deadline
    std::unique_ptr<AttemptLog> log;  // null when it could not be opened
    bool log_requested = false;       // TYPE_SEND_LOG: tail in next heartbeat
    int64_t last_step = 0;            // rank 0's latest metric step
    CpuRate cpu;
  };
  // A leased attempt whose checkpoint is being fetched off the loop (from
  // the coordinator or the shared directory): it holds its slots and GPUs,
  // is listed in heartbeats (so its lease stays alive), and its trainer
  // starts once the download has landed and been verified.
  struct Restoring {
    Trial t;  // prepared; t.ranks is null
    launch::RankGroupSpec spec;
    std::future<std::vector<CheckpointNote>> notes;
    bool cancel_requested = false;
  };
  enum class RpcOutcome { kOk, kRetry, kDrop };

  WorkerDaemon(GatewayClient* gateway, launch::ProcessLauncher* launcher,
               Clock* clock, WorkerDaemonOptions options,
               std::unique_ptr<Outbox> outbox);

  void BeginDrain(absl::string_view why);
  void TryRegister();
  void Heartbeat();
  void LeaseMore();
  absl::Status Launch(const v1::TrialLease& lease);
  // Starts the prepared attempt's trainer; `notes` are the checkpoint
  // restore's outcomes, recorded as the trial's metrics.
  absl::Status StartRanks(Trial t, launch::RankGroupSpec spec,
                          const std::vector<CheckpointNote>& notes);
  // Starts the trainers of attempts whose download has landed (or reports
  // them cancelled/preempted).
  absl::Status PollRestores();
  absl::Status FailLease(const v1::TrialLease& lease,
                         v1::FailRequest::Reason reason, int exit_code,
                         const std::string& message,
                         const AttemptLog* log = nullptr);
  void ConsumeOutput(Trial* t);
  // Returns false for a line that is not a trainer event (it belongs in the
  // attempt's log).
  bool HandleEvent(Trial* t, const std::string& line);
  // The attempt's resource use for its heartbeat entry.
  void SampleSystem(Trial* t, v1::SystemSample* out);
  // Kills the trial's ranks when it missed its progress deadline.
  void CheckProgress(Trial* t, absl::Time now);
  absl::Status FinishTrial(Trial* t);
  absl::Status FlushMetrics(Trial* t);
  absl::Status DeliverOutbox();
  // The front report `e` was refused for its content (`why`): replaces it
  // with a smaller one (a Complete or Fail without its log tail; a Complete
  // whose result is refused becomes Fail(ERROR) naming the refusal) and
  // returns true, or returns false when nothing smaller is left to send
  // (the caller drops it).
  absl::StatusOr<bool> RewriteRefused(const OutboxEntry& e,
                                      const absl::Status& why);
  // Classifies a failed call: backs off for transient errors, schedules a
  // re-registration on NotFound. `what` names the call in logs.
  RpcOutcome OnRpcError(const absl::Status& status, absl::string_view what);
  void OnRpcOk();
  bool RpcAllowed() const;
  int FreeSlots() const;
  std::vector<int> FreeGpus() const;
  void SaveWorkerId();
  // A write under the work dir failed (`what` says which): pauses leasing
  // and logs it, once per episode. Never fatal.
  void OnDiskError(const absl::Status& s, absl::string_view what);
  // Notes a journal (outbox) write error; OK otherwise.
  void Journaled(const absl::Status& s);
  // While leasing is paused: probes the work dir every disk_probe_interval
  // (ProbeWrite + Outbox::Persist) and resumes when both succeed. Otherwise
  // checks the free space (statvfs) before a lease.
  void CheckDisk();
  // Records the uploader's outcomes as metrics of their (running) trials;
  // `finishing` also takes those of that trial.
  void TakeCheckpointNotes(Trial* finishing);

  GatewayClient* const gateway_;
  launch::ProcessLauncher* const launcher_;
  Clock* const clock_;
  const WorkerDaemonOptions options_;
  std::unique_ptr<Outbox> outbox_;
  std::mt19937_64 rng_;

  std::atomic<bool> drain_requested_{false};
  bool draining_ = false;
  bool done_ = false;
  bool registered_ = false;
  // Set when the coordinator refuses the token at Register: Run() returns it.
  absl::Status fatal_;
  std::string worker_id_;
  absl::Duration heartbeat_interval_ = absl::Seconds(5);
  absl::Time next_heartbeat_ = absl::InfinitePast();
  absl::Time next_lease_ = absl::InfinitePast();
  absl::Time next_rpc_ = absl::InfinitePast();  // backoff gate
  absl::Duration backoff_ = absl::ZeroDuration();
  absl::Time drain_flush_deadline_ = absl::InfiniteFuture();
  uint64_t not_found_entry_ = 0;  // outbox id that got NOT_FOUND once
  // A report refused (INTERNAL, UNKNOWN, RESOURCE_EXHAUSTED) this many times
  // in a row, while heartbeats succeed, is rewritten (RewriteRefused).
  static constexpr int kMaxReportRefusals = 3;
  uint64_t refused_entry_ = 0;  // outbox id refused last
  int refused_count_ = 0;
  uint64_t refused_heartbeats_ok_ = 0;  // heartbeats_ok_ at its first refusal
  uint64_t heartbeats_ok_ = 0;
  std::map<std::string, Trial> trials_;         // key: trial_id
  std::map<std::string, Restoring> restoring_;  // key: trial_id
  std::map<int, bool> gpu_busy_;                // gpu index -> allocated
  // Outbox id acknowledged last (entries are delivered in order).
  std::atomic<uint64_t> delivered_id_{0};
  std::unique_ptr<CheckpointUploader> uploader_;  // checkpoint_sync only
  // Secret environment values kept out of logs and failure messages.
  const SecretRedactor redactor_;
  std::unique_ptr<GpuMonitor> gpu_;  // opened for the first GPU trial
  bool gpu_tried_ = false;
  // Full work dir: OK, or the first write error of this episode.
  absl::Status disk_error_;
  absl::Time disk_error_since_ = absl::InfinitePast();
  absl::Time next_disk_probe_ = absl::InfinitePast();
  int disk_errors_ = 0;  // write errors in this episode
};

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_WORKER_DAEMON_H_
