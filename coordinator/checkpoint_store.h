// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/checkpoint_store.h
//
// The coordinator as the default blob store for trial checkpoints (issue 16
// item 7; docs/reliability-checkpoints.md): a worker daemon uploads a
// trial's checkpoint after the trainer writes it, and a daemon on another
// host downloads it before the next attempt, so a drained or preempted trial
// resumes from its checkpoint anywhere.
//
// Layout: <dir>/<sweep>_<trial hash>/<step>.blob, metadata rows in the
// store's trial_checkpoints table (store::CheckpointRecord). An upload is
// written to a unique .part file, checked against the size and SHA-256 its
// header announced, fsynced, renamed to <step>.blob, the directory fsynced,
// and only then recorded in the store: a crash at any point leaves either
// nothing visible or a complete blob (Open() deletes .part files and blobs
// without a row, and rows without a blob). The newest `keep_per_trial` blobs
// of a trial are kept (the previous one stays until the new one is durable).
//
// Reading verifies the SHA-256 again; a blob that fails is set aside
// (<step>.blob.corrupt-<unix seconds>, kept until the trial's GC), its row
// deleted, and DataLoss returned so the caller can ask for the previous one.
//
// Garbage collection: CollectGarbage() deletes the blobs of every trial
// whose state does not keep checkpoints (TrialStateKeepsCheckpoints) or that
// no longer exists; the server runs it periodically and after a trial ends.
// A failed trial's blobs are kept for `keep_failed` after it failed
// (--checkpoint-keep-failed), so `smoe sweep retry` resumes it from its last
// checkpoint; when an upload would pass the total cap, those kept blobs are
// evicted first (longest-failed first) before the upload is refused.
//
// Caps: a blob larger than max_blob_bytes, one that would take the store
// past max_total_bytes, or one that would leave less than min_free_bytes
// free on the data dir's filesystem is refused with ResourceExhausted naming
// the sizes, so checkpoints never fill the disk the store commits to.
//
// Thread safety: safe for concurrent use.
#ifndef SMOE_COORDINATOR_CHECKPOINT_STORE_H_
#define SMOE_COORDINATOR_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

struct CheckpointStoreOptions {
  std::string dir;  // REQUIRES: non-empty; created if missing
  int64_t max_blob_bytes = int64_t{2} << 30;    // --checkpoint-max-bytes
  int64_t max_total_bytes = int64_t{20} << 30;  // --checkpoint-store-bytes
  // Free space an upload must leave on the filesystem (besides the blob).
  int64_t min_free_bytes = int64_t{256} << 20;
  int keep_per_trial = 2;  // newest blobs kept per trial (>= 1)
  // How long a failed trial keeps its blobs (a retry resumes from them);
  // zero: collected when it fails, like succeeded and cancelled trials.
  absl::Duration keep_failed = absl::Hours(24);  // --checkpoint-keep-failed
  // Whether succeeded trials of sweep `sweep_id` keep their newest blob (the
  // sweep's keep_final_checkpoint, issue 31 item 8); null = none do. Their
  // other blobs are collected.
  std::function<bool(const std::string& sweep_id)> keeps_final;
  // The time GC compares `keep_failed` against; null = absl::Now.
  std::function<absl::Time()> now;
  // The workers' shared checkpoint directory (`smoe worker
  // --checkpoint-dir`), when the coordinator mounts it too: CollectGarbage
  // also removes its <sweep>_<hash> directories of ended trials. Empty = none.
  std::string shared_dir;
};

// Whether a trial in state `s` keeps its checkpoints. Pending and running
// trials do (the next attempt resumes from them); succeeded, failed and
// cancelled ones do not: their blobs are garbage-collected. A new state (a
// `pruned` trial of an adaptive sweep, which may be resumed) must be added
// here; the switch has no default so the compiler flags it.
bool TrialStateKeepsCheckpoints(store::TrialState s);

class CheckpointStore {
 public:
  // Creates `options.dir`, loads the rows and removes debris of interrupted
  // uploads (see the file comment). `store` must outlive the result.
  static absl::StatusOr<std::unique_ptr<CheckpointStore>> Open(
      store::ExperimentStore* store, CheckpointStoreOptions options);
  ~CheckpointStore();

  // One upload in progress. Destroying it before Finish() succeeded removes
  // its .part file.
  class Upload {
   public:
    ~Upload();
    // Appends data; DataLoss when it goes beyond the announced size.
    absl::Status Append(absl::string_view data);
    // Verifies size and SHA-256, makes the blob durable, records it and
    // drops the trial's blobs beyond keep_per_trial. DataLoss on a mismatch.
    absl::StatusOr<store::CheckpointRecord> Finish();

   private:
    friend class CheckpointStore;
    Upload() = default;
    struct State;
    std::unique_ptr<State> state_;
  };

  // Starts an upload of `header` (trial_id, step >= 0, file_name, bytes,
  // sha256, attempt, worker_id). InvalidArgument names a bad field;
  // ResourceExhausted names the size and the cap it exceeds.
  absl::StatusOr<std::unique_ptr<Upload>> BeginUpload(
      store::CheckpointRecord header);

  // The newest checkpoint of `trial_id` (with step < before_step when
  // before_step > 0), if any.
  std::optional<store::CheckpointRecord> Latest(const std::string& trial_id,
                                                int64_t before_step = 0);
  // Every checkpoint of `trial_id`, by step.
  std::vector<store::CheckpointRecord> List(const std::string& trial_id);

  // Streams the blob of `c` to `sink` in chunks of at most kBlobChunkBytes
  // (sink returns false to stop: Cancelled), verifying its SHA-256. On a
  // mismatch or a missing file: the blob is set aside, its row deleted, and
  // DataLoss returned (after the data was streamed: the reader must verify
  // too, as the worker daemon does).
  absl::Status Read(const store::CheckpointRecord& c,
                    const std::function<bool(absl::string_view)>& sink);

  // After the store deleted sweep `sweep_id` (its checkpoint rows went with
  // it): forgets its trials' blobs and removes their directories, here and
  // in shared_dir. Returns the number of blob files removed. A crash before
  // this runs leaves files only: Open() removes blobs without a row and
  // CollectGarbage() the directories of trials that no longer exist.
  int DropSweep(const std::string& sweep_id);

  // Deletes the blobs of trials that no longer keep checkpoints. Returns how
  // many trials were collected.
  absl::StatusOr<int> CollectGarbage();

  // Bytes of the stored blobs (plus uploads in progress).
  int64_t total_bytes();
  const CheckpointStoreOptions& options() const { return options_; }
  // The blob file of `c` (for tests and the artifact download).
  std::string BlobPath(const store::CheckpointRecord& c) const;

 private:
  CheckpointStore(store::ExperimentStore* store,
                  CheckpointStoreOptions options);
  absl::Status Load();
  std::string TrialDir(const std::string& trial_id) const;
  absl::Time Now() const { return options_.now ? options_.now() : absl::Now(); }
  // Whether `t` keeps its blobs now (its state, or a failure younger than
  // keep_failed).
  bool Keeps(const store::TrialRecord& t, absl::Time now) const;
  // A succeeded trial of a keep_final_checkpoint sweep (its newest blob).
  bool KeepsFinal(const store::TrialRecord& t) const;
  // Deletes every blob of `trial_id` and its directory.
  absl::Status CollectTrial(const std::string& trial_id);
  // Collects kept failed trials' blobs, longest-failed first, until `bytes`
  // more fit under max_total_bytes (or none is left). Returns how many
  // trials were collected.
  absl::StatusOr<int> EvictFailed(int64_t bytes);
  // Deletes the rows, then the files, of `records`.
  absl::Status Delete(const std::vector<store::CheckpointRecord>& records);
  absl::Status Record(const store::CheckpointRecord& c);
  void Release(int64_t reserved);

  store::ExperimentStore* const store_;
  const CheckpointStoreOptions options_;

  absl::Mutex mu_;
  // trial_id -> step -> record.
  std::map<std::string, std::map<int64_t, store::CheckpointRecord>> index_
      ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;     // stored blobs
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // uploads in progress
  int64_t upload_seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_CHECKPOINT_STORE_H_
