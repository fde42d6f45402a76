// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/scheduler_actions.cc
//
// The Scheduler's per-trial actions and sweep annotations (the dashboard's
// admin actions, coordinator/http/http_actions.cc). Kept apart from
// scheduler.cc, whose lifecycle code they reuse through the *Locked helpers.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "coordinator/scheduler.h"

namespace smoe::coordinator {
namespace {

using store::TrialRecord;
using store::TrialState;
using store::WriteBatch;

constexpr size_t kMaxNotesBytes = 8 << 10;
constexpr size_t kMaxTags = 32;
constexpr size_t kMaxTagLength = 64;

absl::Status CheckTag(const std::string& tag) {
  bool ok = !tag.empty() && tag.size() <= kMaxTagLength;
  for (char c : tag) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
                c == '+' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "tags: '", tag.substr(0, 64), tag.size() > 64 ? "...'" : "'",
      " must be 1..", kMaxTagLength, " characters of [A-Za-z0-9._:+-]"));
}

absl::StatusOr<TrialRecord*> FindTrial(
    std::unordered_map<std::string, TrialRecord>* trials,
    const std::string& trial_id) {
  auto it = trials->find(trial_id);
  if (it == trials->end()) {
    return absl::NotFoundError(
        absl::StrCat("no trial '", trial_id.substr(0, 100), "'"));
  }
  return &it->second;
}

}  // namespace

absl::Status Scheduler::CancelTrialLocked(const std::string& trial_id) {
  SMOE_ASSIGN_OR_RETURN(TrialRecord * found, FindTrial(&trials_, trial_id));
  const TrialRecord& t = *found;
  WriteBatch batch;
  if (t.state == TrialState::kPending) {
    TrialRecord u = t;
    u.state = TrialState::kCancelled;
    u.updated_at = clock_->Now();
    batch.trials.push_back(u);
  } else if (t.state == TrialState::kRunning) {
    EndAttemptLocked(t, store::AttemptOutcome::kCancelled,
                     TrialState::kCancelled, 0, "trial cancelled", &batch);
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial '", trial_id, "' is ", store::TrialStateName(t.state),
        "; only pending or running trials can be cancelled"));
  }
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  SMOE_LOG(INFO) << "trial " << trial_id << " cancelled";
  return absl::OkStatus();
}

absl::Status Scheduler::RetryTrialLocked(const std::string& trial_id) {
  SMOE_ASSIGN_OR_RETURN(TrialRecord * found, FindTrial(&trials_, trial_id));
  const TrialRecord& t = *found;
  if (t.state != TrialState::kFailed && t.state != TrialState::kCancelled) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial '", trial_id, "' is ", store::TrialStateName(t.state),
        "; only failed or cancelled trials can be retried"));
  }
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(t.sweep_id));
  if (sweep->record.state == store::SweepState::kCancelled) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", t.sweep_id,
        "' is cancelled; retry the sweep (it re-queues its trials) instead "
        "of one trial"));
  }
  TrialRecord u = t;
  u.state = TrialState::kPending;
  u.error_count = 0;
  u.preempt_count = 0;
  u.worker_id.clear();
  u.updated_at = clock_->Now();
  WriteBatch batch;
  batch.trials.push_back(u);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  SMOE_LOG(INFO) << "trial " << trial_id << " re-queued";
  return absl::OkStatus();
}

absl::StatusOr<SweepView> Scheduler::AnnotateSweepLocked(
    const std::string& sweep_id, const SweepAnnotation& a) {
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  store::SweepRecord r = sweep->record;
  if (a.notes.has_value()) {
    if (a.notes->size() > kMaxNotesBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("notes: ", a.notes->size(), " bytes; at most ",
                       kMaxNotesBytes, " are kept"));
    }
    r.notes = *a.notes;
  }
  if (a.tags.has_value()) {
    if (a.tags->size() > kMaxTags) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tags: ", a.tags->size(), " tags; at most ", kMaxTags, " allowed"));
    }
    std::vector<std::string> tags;
    for (const std::string& tag : *a.tags) {
      SMOE_RETURN_IF_ERROR(CheckTag(tag));
      if (std::find(tags.begin(), tags.end(), tag) == tags.end()) {
        tags.push_back(tag);
      }
    }
    r.tags = std::move(tags);
  }
  if (a.archived.has_value()) r.archived = *a.archived;
  r.updated_at = clock_->Now();
  WriteBatch batch;
  batch.sweeps.push_back(r);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  return ViewLocked(*sweep);
}

absl::StatusOr<DeletedSweep> Scheduler::DeleteSweepLocked(
    const std::string& sweep_id) {
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  const StateCounts& c = sweep->counts;
  if (c.pending + c.running > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", sweep_id, "' has ", c.pending + c.running,
        c.pending + c.running == 1 ? " live trial (" : " live trials (",
        c.pending, " pending, ", c.running,
        " running); cancel it first (smoe sweep cancel ", sweep_id,
        "), then delete it"));
  }
  WriteBatch batch;
  batch.deleted_sweeps.push_back(sweep_id);
  // Queued after every earlier write of the sweep, so they commit first (in
  // the same transaction or an earlier one) and no row of it is left.
  SMOE_RETURN_IF_ERROR(EnqueueLocked(batch));
  DeletedSweep out;
  out.sweep_id = sweep_id;
  for (const std::string& id : sweep->trial_ids) {
    if (id.empty()) continue;
    out.trial_ids.push_back(id);
    // workers_[].stopping keeps the id: a cancelled attempt may still be
    // stopping in that trial's directory, and a sweep re-submitted under the
    // name has the same trial ids (each heartbeat refreshes the set).
    trials_.erase(id);
  }
  deleted_versions_[sweep_id] =
      std::max(sweep->version, sweep->durable.version);
  uncaptured_.erase(sweep_id);
  sweeps_.erase(sweep_id);  // search state and change log go with it
  SMOE_LOG(INFO) << "sweep " << sweep_id << " deleted (" << out.trial_ids.size()
                 << " trials)";
  return out;
}

absl::Status Scheduler::CancelTrial(const std::string& trial_id) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return CancelTrialLocked(trial_id);
  });
}

absl::Status Scheduler::RetryTrial(const std::string& trial_id) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return RetryTrialLocked(trial_id);
  });
}

absl::StatusOr<SweepView> Scheduler::AnnotateSweep(const std::string& sweep_id,
                                                   const SweepAnnotation& a) {
  return Mutate<absl::StatusOr<SweepView>>(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return AnnotateSweepLocked(sweep_id, a);
      });
}

absl::StatusOr<DeletedSweep> Scheduler::DeleteSweep(
    const std::string& sweep_id) {
  absl::StatusOr<DeletedSweep> deleted = Mutate<absl::StatusOr<DeletedSweep>>(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return DeleteSweepLocked(sweep_id);
      });
  if (!deleted.ok()) return deleted;
  // Durable now: a crash from here on leaves no row of the sweep, only
  // files and caches that the listeners (and, after a crash, the checkpoint
  // store's start-up and periodic sweeps) remove.
  // Called under listeners_mu_, so RemoveSweepDeletedListener() returns
  // only once no call of the removed listener is running.
  absl::MutexLock lock(&listeners_mu_);
  for (const auto& [id, fn] : deleted_listeners_) fn(*deleted);
  return deleted;
}

int Scheduler::AddSweepDeletedListener(SweepDeletedListener fn) {
  absl::MutexLock lock(&listeners_mu_);
  const int id = ++next_listener_;
  deleted_listeners_[id] = std::move(fn);
  return id;
}

void Scheduler::RemoveSweepDeletedListener(int id) {
  absl::MutexLock lock(&listeners_mu_);
  deleted_listeners_.erase(id);
}

}  // namespace smoe::coordinator
