// Copyright 2026 SMoE Lab authors.
#include "worker/launch/rank_group.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::launch {
namespace {

bool Failed(const ExitInfo& e) { return e.signaled || e.exit_code != 0; }

std::string How(const ExitInfo& e) {
  return e.signaled ? absl::StrCat("killed by signal ", e.signal)
                    : absl::StrCat("exit code ", e.exit_code);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::optional<std::string> VisibleDevicesForRank(const std::vector<int>& ids,
                                                 int world, int rank) {
  if (ids.empty()) return std::nullopt;
  if (world <= 1 || static_cast<int>(ids.size()) < world) {
    return absl::StrJoin(ids, ",");
  }
  const size_t per = ids.size() / static_cast<size_t>(world);
  return absl::StrJoin(ids.begin() + static_cast<ptrdiff_t>(rank * per),
                       ids.begin() + static_cast<ptrdiff_t>((rank + 1) * per),
                       ",");
}

absl::StatusOr<std::unique_ptr<RankGroup>> RankGroup::Start(
    ProcessLauncher* launcher, Clock* clock, RankGroupSpec spec) {
  if (launcher == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("RankGroup: null launcher or clock");
  }
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("RankGroup: argv is empty");
  }
  const int world = spec.world_size;
  if (world < 1 || world > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("RankGroup: world_size ", world, ": must be in 1..4096"));
  }
  if (spec.grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RankGroup: grace ", absl::FormatDuration(spec.grace),
                     ": must be >= 0"));
  }
  std::string rendezvous;
  if (world > 1) {
    if (!IsDirectory(spec.rendezvous_dir)) {
      return absl::InvalidArgumentError(
          absl::StrCat("RankGroup: rendezvous_dir '", spec.rendezvous_dir,
                       "' is not a directory (world_size ", world, ")"));
    }
    rendezvous = absl::StrCat(spec.rendezvous_dir, "/", kRendezvousFile);
    // A stale store from a killed run would hand the new ranks old keys.
    if (unlink(rendezvous.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat("cannot remove the stale rendezvous '", rendezvous,
                       "': ", strerror(errno)));
    }
  }
  std::unique_ptr<RankGroup> group(
      new RankGroup(clock, std::move(spec), std::move(rendezvous)));
  const RankGroupSpec& s = group->spec_;
  for (int r = 0; r < world; ++r) {
    ProcessSpec p;
    p.argv = s.argv;
    p.working_dir = s.working_dir;
    p.env = s.env;
    p.unset_env = s.unset_env;
    p.parent_death_signal = s.parent_death_signal;
    if (auto v = VisibleDevicesForRank(s.gpu_ids, world, r)) {
      p.env["CUDA_VISIBLE_DEVICES"] = *v;
    }
    if (world > 1) {
      p.env["SMOE_RANK"] = absl::StrCat(r);
      p.env["SMOE_WORLD_SIZE"] = absl::StrCat(world);
      p.env["SMOE_RENDEZVOUS"] = group->rendezvous_;
    }
    if (s.output) {
      RankOutput o = s.output(r);
      p.stdout_to = std::move(o.out);
      p.stderr_to = std::move(o.err);
    }
    absl::StatusOr<std::unique_ptr<Process>> proc = launcher->Start(p);
    if (!proc.ok()) {
      // The destructor kills and reaps the ranks already started.
      if (world == 1) return proc.status();
      return absl::Status(
          proc.status().code(),
          absl::StrCat("rank ", r, ": ", proc.status().message()));
    }
    group->ranks_.push_back(*std::move(proc));
    group->exits_.emplace_back();
  }
  return group;
}

RankGroup::RankGroup(Clock* clock, RankGroupSpec spec, std::string rendezvous)
    : clock_(clock),
      spec_(std::move(spec)),
      rendezvous_(std::move(rendezvous)) {}

RankGroup::~RankGroup() {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!exits_[r].has_value()) ranks_[r]->Signal(SIGKILL).IgnoreError();
  }
  ranks_.clear();  // each Process reaps its child
  if (!done_) RemoveRendezvous();
}

void RankGroup::Note(const std::string& line) const {
  if (spec_.note) spec_.note(line);
}

void RankGroup::RemoveRendezvous() const {
  if (!rendezvous_.empty()) unlink(rendezvous_.c_str());
}

void RankGroup::Signal(int sig) {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (exits_[r].has_value()) continue;
    absl::Status s = ranks_[r]->Signal(sig);
    if (!s.ok()) Note(absl::StrCat("rank ", r, ": ", s.message()));
  }
}

void RankGroup::Stop(absl::Duration grace) {
  if (!term_sent_) {
    Signal(SIGTERM);
    term_sent_ = true;
  }
  kill_at_ = std::min(kill_at_, clock_->Now() + grace);
}

void RankGroup::Kill() {
  Signal(SIGKILL);
  if (!kill_sent_) {
    kill_sent_ = true;
    reap_by_ = clock_->Now() + spec_.reap_deadline;
  }
}

bool RankGroup::stuck() const {
  return !done_ && kill_sent_ && clock_->Now() >= reap_by_;
}

bool RankGroup::Poll() {
  if (done_) return true;
  const int world = world_size();
  bool all = true;
  for (int r = 0; r < world; ++r) {
    std::optional<ExitInfo>& e = exits_[static_cast<size_t>(r)];
    if (e.has_value()) continue;
    e = ranks_[static_cast<size_t>(r)]->Poll();
    if (!e.has_value()) {
      all = false;
      continue;
    }
    if (Failed(*e) && !first_failed_.has_value()) first_failed_ = r;
    if (world == 1) continue;
    if (Failed(*e)) {
      if (!term_sent_) {
        Note(absl::StrCat("rank ", r, " ended (", How(*e),
                          "); SIGTERM to the other ranks"));
      }
      Stop(spec_.grace);
    } else if (!finished_rank_.has_value()) {
      finished_rank_ = r;
      finish_by_ = clock_->Now() + spec_.grace;
    }
  }
  if (all) {
    done_ = true;
    RemoveRendezvous();
    return true;
  }
  const absl::Time now = clock_->Now();
  if (!term_sent_ && now >= finish_by_) {
    Note(absl::StrCat("ranks still running ", absl::FormatDuration(spec_.grace),
                      " after rank ", *finished_rank_,
                      " finished; sending SIGTERM"));
    Stop(spec_.grace);
  }
  if (term_sent_ && !kill_sent_ && now >= kill_at_) {
    Note("ranks still running after their SIGTERM grace; sending SIGKILL");
    Kill();
  }
  return false;
}

int RankGroup::DecisiveRank() const {
  size_t decisive = 0;
  for (size_t r = 1; r < exits_.size(); ++r) {
    if (!Failed(*exits_[decisive]) && Failed(*exits_[r])) decisive = r;
  }
  return static_cast<int>(decisive);
}

}  // namespace smoe::launch
