// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/checkpoint_sync.h
//
// Moves trial checkpoints between a worker's trial directories and the
// coordinator's checkpoint store (docs/reliability-checkpoints.md), so a
// trial drained, preempted or lost on one worker resumes from its
// checkpoint on another. Trainers do not change: they keep writing
// WORKDIR/<file> atomically (temp + rename) and print
// {"event":"checkpoint","step":S[,"file":F]} (F defaults to
// checkpoint.smoeckpt).
//
// Upload: on a checkpoint event the daemon calls Snapshot(), which hard-links
// the checkpoint to <trial dir>/.upload/<S>-<F> (the trainer's next rename
// cannot change a linked inode; a copy where linking fails) and records the
// step in <trial dir>/checkpoint.step; the uploader thread then streams it
// (PutCheckpoint) with its SHA-256. Only the newest pending snapshot of a
// trial is uploaded; older pending ones are dropped, and an upload in
// flight is abandoned when a newer snapshot of its trial arrives. Uploads are
// best effort: a refusal (over the coordinator's cap: the reply names the size)
// is logged once per trial and reported as an outcome; transient errors are
// retried up to 3 times.
//
// Download (Restore): before an attempt starts, when the lease says the
// coordinator holds a checkpoint newer than the one in the trial directory,
// it is streamed to <trial dir>/.download, its size and SHA-256 checked
// against the stream's header, and renamed into place (the local one, if
// any, kept as <F>.prev). A download that fails verification is set aside
// (.download.corrupt-<unix seconds>) and the previous stored checkpoint is
// asked for; with none left the attempt starts from what the directory has
// (or from scratch). Every outcome is returned for the daemon to record as a
// trial metric (checkpoint/downloaded, checkpoint/download_corrupt).
//
// Shared-filesystem mode (`smoe worker --checkpoint-dir DIR`, a directory
// every worker mounts, e.g. a ReadWriteMany PVC): nothing is streamed
// through the coordinator. Upload copies the snapshot atomically to
// DIR/<sweep>_<hash>/<S>-<F> with a sidecar <S>-<F>.sha256 ("<hex> <bytes>")
// written after it (the newest two kept); Restore takes the newest entry
// whose sidecar matches, setting bad ones aside like downloads. The
// coordinator (`--checkpoint-shared-dir DIR`, when it mounts DIR too)
// deletes a trial's directory when it ends.
//
// Thread safety: CheckpointUploader's methods are thread-safe; Restore runs
// on the caller's thread.
#ifndef SMOE_WORKER_DAEMON_CHECKPOINT_SYNC_H_
#define SMOE_WORKER_DAEMON_CHECKPOINT_SYNC_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/smoe.pb.h"
#include "worker/daemon/gateway_client.h"

namespace smoe::worker {

// The file a checkpoint event names, or the default.
inline constexpr char kDefaultCheckpointFile[] = "checkpoint.smoeckpt";

// Something the daemon records on the trial as a metric (step, name, value).
struct CheckpointNote {
  std::string trial_id;
  int attempt = 0;
  int64_t step = 0;
  std::string name;  // "checkpoint/uploaded", "checkpoint/upload_refused", ...
  double value = 0;
};

// The step and file of the newest checkpoint the daemon saw in `trial_dir`
// (<trial dir>/checkpoint.step), if any.
struct LocalCheckpoint {
  int64_t step = 0;
  std::string file;
};
std::optional<LocalCheckpoint> ReadLocalCheckpoint(
    const std::string& trial_dir);

class CheckpointUploader {
 public:
  // `gateway` must outlive the uploader and allow PutCheckpoint from another
  // thread.
  // `shared_dir`: the shared-filesystem mode's directory; empty = upload to
  // the coordinator.
  // `delivered(id)` (may be null) says whether the daemon's reports up to
  // outbox entry `id` are acknowledged: a snapshot is uploaded only after
  // the metrics reported before it, so a trial resumed elsewhere from it has
  // no gap in its curves.
  explicit CheckpointUploader(GatewayClient* gateway,
                              std::string shared_dir = "",
                              std::function<bool(uint64_t)> delivered = {});
  ~CheckpointUploader();  // abandons what is pending; joins the thread

  // Snapshots <trial_dir>/<file> (see the file comment) and queues its
  // upload as `step` of the attempt. NotFound when the trainer wrote no such
  // file (nothing queued); InvalidArgument for a bad file name.
  absl::Status Snapshot(const std::string& worker_id,
                        const v1::TrialLease& lease,
                        const std::string& trial_dir, int64_t step,
                        const std::string& file, uint64_t after_report = 0);

  // Waits until nothing of `trial_id` is queued or in flight, at most
  // `timeout` (real time). True when idle.
  bool WaitIdle(const std::string& trial_id, absl::Duration timeout);

  // Outcomes since the last call.
  std::vector<CheckpointNote> TakeNotes();

 private:
  struct Job {
    std::string worker_id;
    std::string trial_id;
    int attempt = 0;
    int64_t step = 0;
    std::string file;
    std::string snapshot;       // path of the linked copy
    uint64_t after_report = 0;  // outbox id that must be delivered first
  };
  void Loop();
  void Upload(const Job& job);

  absl::Status CopyToShared(const Job& job, int64_t* bytes);

  GatewayClient* const gateway_;
  const std::string shared_dir_;
  const std::function<bool(uint64_t)> delivered_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::map<std::string, Job> pending_ ABSL_GUARDED_BY(mu_);  // by trial
  std::string in_flight_ ABSL_GUARDED_BY(mu_);
  // Set when a newer snapshot of the in-flight trial arrives: the running
  // upload is abandoned (a drain's SIGTERM checkpoint does not wait behind
  // a superseded one).
  std::atomic<bool> supersede_{false};
  std::vector<CheckpointNote> notes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, bool> refused_logged_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Downloads the newest stored checkpoint of `lease`'s trial into
// `trial_dir` when the lease announces one (checkpoint_step > 0) newer than
// the trial directory's; see the file comment. Never fails the attempt:
// returns the notes to record (empty when nothing was done).
std::vector<CheckpointNote> RestoreCheckpoint(GatewayClient* gateway,
                                              const std::string& worker_id,
                                              const v1::TrialLease& lease,
                                              const std::string& trial_dir);
// The same from the shared-filesystem mode's directory.
std::vector<CheckpointNote> RestoreSharedCheckpoint(
    const std::string& shared_dir, const v1::TrialLease& lease,
    const std::string& trial_dir);

// <shared_dir>/<trial id with '/' -> '_'>.
std::string SharedTrialDir(const std::string& shared_dir,
                           const std::string& trial_id);

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_CHECKPOINT_SYNC_H_
