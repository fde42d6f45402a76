// Copyright 2026 SMoE Lab authors.
//
// File: store/types.cc

#include "store/types.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace smoe::store {
namespace {

// Returns the enumerator whose name (given by `name_of`) equals `name`;
// InvalidArgument names `what` and the value otherwise.
template <typename Enum, int kCount>
absl::StatusOr<Enum> ParseByName(absl::string_view name,
                                 const char* (*name_of)(Enum),
                                 absl::string_view what) {
  for (int i = 0; i < kCount; ++i) {
    const Enum e = static_cast<Enum>(i);
    if (name == name_of(e)) return e;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", what, " '", name, "'"));
}

}  // namespace

const char* TrialStateName(TrialState s) {
  switch (s) {
    case TrialState::kPending:
      return "pending";
    case TrialState::kRunning:
      return "running";
    case TrialState::kSucceeded:
      return "succeeded";
    case TrialState::kFailed:
      return "failed";
    case TrialState::kCancelled:
      return "cancelled";
    case TrialState::kPruned:
      return "pruned";
  }
  return "unknown";
}

const char* AttemptOutcomeName(AttemptOutcome o) {
  switch (o) {
    case AttemptOutcome::kRunning:
      return "running";
    case AttemptOutcome::kSucceeded:
      return "succeeded";
    case AttemptOutcome::kFailed:
      return "failed";
    case AttemptOutcome::kPreempted:
      return "preempted";
    case AttemptOutcome::kLost:
      return "lost";
    case AttemptOutcome::kCancelled:
      return "cancelled";
    case AttemptOutcome::kBadSpec:
      return "bad_spec";
    case AttemptOutcome::kHung:
      return "hung";
    case AttemptOutcome::kPruned:
      return "pruned";
  }
  return "unknown";
}

const char* SweepStateName(SweepState s) {
  switch (s) {
    case SweepState::kActive:
      return "active";
    case SweepState::kCompleted:
      return "completed";
    case SweepState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

absl::StatusOr<TrialState> ParseTrialState(absl::string_view name) {
  return ParseByName<TrialState, 6>(name, &TrialStateName, "trial state");
}

absl::StatusOr<AttemptOutcome> ParseAttemptOutcome(absl::string_view name) {
  return ParseByName<AttemptOutcome, 9>(name, &AttemptOutcomeName,
                                        "attempt outcome");
}

absl::StatusOr<SweepState> ParseSweepState(absl::string_view name) {
  return ParseByName<SweepState, 3>(name, &SweepStateName, "sweep state");
}

bool IsTerminal(TrialState s) {
  return s == TrialState::kSucceeded || s == TrialState::kFailed ||
         s == TrialState::kCancelled;
}

}  // namespace smoe::store
