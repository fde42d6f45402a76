// Copyright 2026 SMoE Lab authors.
//
// File: worker/launch/rank_group.h
//
// The one way SMoE Lab starts the ranks of a trial on this machine: the worker
// daemon (a lease with ep_size W), `smoe train|skillmix run --ep-size W` and
// bench/all_to_all_bench all start a RankGroup.
//
//   RankGroup::Start(launcher, clock, spec) -> W processes of spec.argv
//   Poll() each step (never blocks) -> true once every rank has exited
//   Stop(grace) / Kill()          -> the stop policy below
//   DecisiveRank() / DecisiveExit() -> the exit that speaks for the group
//
// Environment (docs/trainer-protocol.md), on top of spec.env:
//   * W > 1: SMOE_RANK=r, SMOE_WORLD_SIZE=W and SMOE_RENDEZVOUS=
//     <spec.rendezvous_dir>/ep-rendezvous. W = 1: none of the three (a
//     one-process trial, the trainer's default).
//   * CUDA_VISIBLE_DEVICES=VisibleDevicesForRank(spec.gpu_ids, W, r) when
//     gpu_ids is non-empty; else whatever spec.env / the parent's environment
//     says.
//
// One rendezvous rule: a c10d FileStore at <rendezvous_dir>/ep-rendezvous
// (worker/model/rendezvous.cc treats any SMOE_RENDEZVOUS that is not
// host:port as a FileStore path). Every rank of a group runs on this machine,
// so a file in the trial's own directory is enough, and unlike a TCP port
// picked free and bound later by rank 0 nothing else can take it in between.
// Start() removes a stale store first (a killed run's file would hand the new
// ranks old keys); the group removes it again once every rank has exited.
//
// One stop policy:
//   * a rank that fails (exit code != 0 or a signal): the others cannot go on
//     without it; SIGTERM to every rank still running, SIGKILL `grace` later;
//   * a rank that succeeds: the others are about to as well; those still
//     running `grace` later get SIGTERM (then SIGKILL after another grace).
//     This keeps a follower's last moments after a successful rank 0 from
//     turning into exit 75;
//   * Stop(grace) (a cancel, a drain, Ctrl-C): SIGTERM now, SIGKILL `grace`
//     later; the earliest SIGKILL deadline wins. Kill(): SIGKILL now;
//   * stuck(): some rank is still not reaped `reap_deadline` after SIGKILL
//     (a process in uninterruptible sleep); callers may give up on it.
// The exit that decides is rank 0's, unless rank 0 succeeded and another rank
// did not: then the lowest such rank's (ExitInfo::ReportedCode: 128 + signal
// for a rank killed by a signal).
//
// Thread-compatible: one thread calls every method (the daemon's loop, the
// CLI's main thread); with PosixProcessLauncher that thread must outlive the
// group (PR_SET_PDEATHSIG). Destroying a group whose ranks still run kills
// them (SIGKILL to their process groups) and reaps them.
#ifndef SMOE_WORKER_LAUNCH_RANK_GROUP_H_
#define SMOE_WORKER_LAUNCH_RANK_GROUP_H_

#include <signal.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "worker/launch/process_launcher.h"

namespace smoe::launch {

// The file name of the FileStore rendezvous inside RankGroupSpec's
// rendezvous_dir.
inline constexpr char kRendezvousFile[] = "ep-rendezvous";

// CUDA_VISIBLE_DEVICES for `rank` of `world` given the GPU ids to share: with
// at least `world` ids, rank r sees the r-th of `world` equal slices of size
// ids.size() / world (ids left over are unused); with fewer, every rank sees
// them all. nullopt when `ids` is empty (leave the variable as it is).
// REQUIRES: 0 <= rank < world.
std::optional<std::string> VisibleDevicesForRank(const std::vector<int>& ids,
                                                 int world, int rank);

// Where one rank's stdout and stderr go.
struct RankOutput {
  OutputSpec out;
  OutputSpec err;
};

struct RankGroupSpec {
  // Every rank runs this command (argv[0] a path). REQUIRES: non-empty.
  std::vector<std::string> argv;
  std::string working_dir;  // empty: the caller's
  // Ranks. REQUIRES: 1..4096 (the range the trainer accepts).
  int world_size = 1;
  // Holds the FileStore rendezvous (kRendezvousFile). REQUIRES: an existing
  // directory when world_size > 1; unused otherwise.
  std::string rendezvous_dir;
  // Split between the ranks by VisibleDevicesForRank; empty: no split.
  std::vector<int> gpu_ids;
  // Every rank's variables on top of the caller's environment (the rank
  // variables above win), and inherited variables every rank must not see.
  std::map<std::string, std::string> env;
  std::vector<std::string> unset_env;
  // Where rank r's output goes; null: both piped (Process::TakeStdoutLines,
  // StderrTail).
  std::function<RankOutput(int rank)> output;
  int parent_death_signal = SIGKILL;  // see ProcessSpec
  // The stop policy's grace (see the file comment). REQUIRES: >= 0.
  absl::Duration grace = absl::Seconds(30);
  // After SIGKILL, how long until stuck() (see the file comment).
  absl::Duration reap_deadline = absl::Seconds(10);
  // Receives one line per stop-policy action ("rank 1 failed (exit code 3);
  // SIGTERM to the other ranks"); null: silent.
  std::function<void(absl::string_view)> note;
};

class RankGroup {
 public:
  // Starts every rank, rank 0 first. Errors: InvalidArgument naming the field
  // for a bad spec; Internal when the stale rendezvous cannot be removed; the
  // launcher's error (prefixed "rank r: " when world_size > 1) when a rank
  // cannot start, after the ranks already started are killed and reaped.
  // `launcher` and `clock` must outlive the group.
  static absl::StatusOr<std::unique_ptr<RankGroup>> Start(
      ProcessLauncher* launcher, Clock* clock, RankGroupSpec spec);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int world_size() const { return static_cast<int>(ranks_.size()); }
  // Rank r's process (its output, pid). REQUIRES: 0 <= r < world_size().
  Process& rank(int r) { return *ranks_[static_cast<size_t>(r)]; }
  // SMOE_RENDEZVOUS of the ranks; empty when world_size() == 1.
  const std::string& rendezvous() const { return rendezvous_; }

  // One step: records the ranks that exited and applies the stop policy.
  // Never blocks. Returns done().
  bool Poll();
  // SIGTERM to every rank still running (once), SIGKILL `grace` from now
  // unless an earlier deadline is already set.
  void Stop(absl::Duration grace);
  // SIGKILL to every rank still running, now.
  void Kill();

  // Every rank has exited (and the rendezvous file is removed).
  bool done() const { return done_; }
  bool term_sent() const { return term_sent_; }
  bool kill_sent() const { return kill_sent_; }
  // See the file comment.
  bool stuck() const;
  // How rank r ended; nullopt while it runs.
  const std::optional<ExitInfo>& exit(int r) const {
    return exits_[static_cast<size_t>(r)];
  }
  // The first rank seen ending with a failure, if any.
  std::optional<int> first_failed() const { return first_failed_; }
  // The rank whose exit decides (see the file comment). REQUIRES: done().
  int DecisiveRank() const;
  ExitInfo DecisiveExit() const { return *exits_[DecisiveRank()]; }

 private:
  RankGroup(Clock* clock, RankGroupSpec spec, std::string rendezvous);
  void Signal(int sig);
  void Note(const std::string& line) const;
  void RemoveRendezvous() const;

  Clock* const clock_;
  const RankGroupSpec spec_;
  const std::string rendezvous_;
  std::vector<std::unique_ptr<Process>> ranks_;
  std::vector<std::optional<ExitInfo>> exits_;
  std::optional<int> first_failed_;
  std::optional<int> finished_rank_;  // the first rank that succeeded
  absl::Time finish_by_ = absl::InfiniteFuture();
  absl::Time kill_at_ = absl::InfiniteFuture();
  absl::Time reap_by_ = absl::InfiniteFuture();
  bool term_sent_ = false;
  bool kill_sent_ = false;
  bool done_ = false;
};

}  // namespace smoe::launch

#endif  // SMOE_WORKER_LAUNCH_RANK_GROUP_H_
