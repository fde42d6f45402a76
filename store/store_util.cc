// Copyright 2026 SMoE Lab authors.
//
// File: store/store_util.cc

#include "store/store_util.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace smoe::store::internal {

int64_t TimeToMicros(absl::Time t) {
  // absl::ToUnixMicros saturates to the int64 limits for the infinities.
  return absl::ToUnixMicros(t);
}

absl::Time MicrosToTime(int64_t us) {
  if (us == std::numeric_limits<int64_t>::max()) return absl::InfiniteFuture();
  if (us == std::numeric_limits<int64_t>::min()) return absl::InfinitePast();
  return absl::FromUnixMicros(us);
}

namespace {

absl::Status MissingParent(absl::string_view row, absl::string_view parent_kind,
                           absl::string_view parent_id) {
  return absl::FailedPreconditionError(
      absl::StrCat(row, " references unknown ", parent_kind, " '", parent_id,
                   "'; nothing of the batch was written"));
}

}  // namespace

absl::Status MissingSweep(const TrialRecord& trial) {
  return MissingParent(absl::StrCat("trial '", trial.trial_id, "'"), "sweep",
                       trial.sweep_id);
}

absl::Status MissingSweep(const DecisionRecord& decision) {
  return MissingParent(absl::StrCat("decision '", decision.action, "' on '",
                                    decision.trial_id, "'"),
                       "sweep", decision.sweep_id);
}

absl::Status MissingTrial(const AttemptRecord& attempt) {
  return MissingParent(absl::StrCat("attempt ", attempt.attempt, " of trial '",
                                    attempt.trial_id, "'"),
                       "trial", attempt.trial_id);
}

absl::Status MissingTrial(const MetricRecord& metric) {
  return MissingParent(
      absl::StrCat("metric '", metric.name, "' at step ", metric.step,
                   " of trial '", metric.trial_id, "'"),
      "trial", metric.trial_id);
}

absl::Status MissingTrial(const WriteBatch::Result& result) {
  return MissingParent(absl::StrCat("result of trial '", result.trial_id, "'"),
                       "trial", result.trial_id);
}

absl::Status MissingTrial(const CheckpointRecord& checkpoint) {
  return MissingParent(absl::StrCat("checkpoint at step ", checkpoint.step,
                                    " of trial '", checkpoint.trial_id, "'"),
                       "trial", checkpoint.trial_id);
}

absl::Status MissingTrial(const TrialLogRecord& log) {
  return MissingParent(absl::StrCat("log of attempt ", log.attempt,
                                    " of trial '", log.trial_id, "'"),
                       "trial", log.trial_id);
}

absl::Status MissingDeletedSweep(absl::string_view sweep_id) {
  return absl::NotFoundError(
      absl::StrCat("cannot delete sweep '", sweep_id, "': no such sweep"));
}

absl::Status CheckNonEmptyId(absl::string_view what, absl::string_view id) {
  if (id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " with an empty id; nothing of the batch was written"));
  }
  return absl::OkStatus();
}

}  // namespace smoe::store::internal
