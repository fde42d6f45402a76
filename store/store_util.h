// Copyright 2026 SMoE Lab authors.
//
// File: store/store_util.h
//
// Helpers shared by the ExperimentStore implementations (internal to store/):
// the time encoding both implementations use, and the wording of the
// missing-parent errors, so SqliteStore and InMemoryStore agree exactly.
#ifndef SMOE_STORE_STORE_UTIL_H_
#define SMOE_STORE_STORE_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "store/types.h"

namespace smoe::store::internal {

// Encodes `t` as integer microseconds since the Unix epoch, rounding toward the
// past. absl::InfinitePast() / InfiniteFuture() map to INT64_MIN / INT64_MAX
// (and times beyond the int64 range saturate to them).
int64_t TimeToMicros(absl::Time t);
// Inverse of TimeToMicros: INT64_MIN / INT64_MAX decode to the infinities.
absl::Time MicrosToTime(int64_t us);
// Returns `t` as the stores keep it: MicrosToTime(TimeToMicros(t)).
inline absl::Time Truncate(absl::Time t) {
  return MicrosToTime(TimeToMicros(t));
}

// FailedPrecondition naming the row and the parent it references that exists
// neither in the store nor earlier in the same batch.
absl::Status MissingSweep(const TrialRecord& trial);
absl::Status MissingSweep(const DecisionRecord& decision);
absl::Status MissingTrial(const AttemptRecord& attempt);
absl::Status MissingTrial(const MetricRecord& metric);
absl::Status MissingTrial(const WriteBatch::Result& result);
absl::Status MissingTrial(const CheckpointRecord& checkpoint);
absl::Status MissingTrial(const TrialLogRecord& log);
// NotFound: the batch deletes sweep `sweep_id`, which does not exist.
absl::Status MissingDeletedSweep(absl::string_view sweep_id);

// InvalidArgument when `id` (of kind `what`) is empty.
absl::Status CheckNonEmptyId(absl::string_view what, absl::string_view id);

}  // namespace smoe::store::internal

#endif  // SMOE_STORE_STORE_UTIL_H_
