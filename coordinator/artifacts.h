// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/artifacts.h
//
// A trial's artifacts, as listed and downloaded through the API (gRPC
// ListArtifacts/GetArtifact, HTTP /api/trials/{id}/artifacts, `smoe
// artifacts`, the dashboard's trial page; issue 18 item 2):
//   checkpoint-<step>-<file name>  a checkpoint blob the coordinator stores
//                                  (coordinator/checkpoint_store.h)
//   result.json                    the trial's parameters, state and final
//                                  result metrics, once it succeeded
// Both protocols go through these functions, so they list the same names.
#ifndef SMOE_COORDINATOR_ARTIFACTS_H_
#define SMOE_COORDINATOR_ARTIFACTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint_store.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

struct ArtifactInfo {
  std::string name;
  std::string kind;  // "checkpoint" | "result"
  int64_t bytes = 0;
  std::string sha256;  // checkpoints
  int64_t step = 0;    // checkpoints
  absl::Time created_at = absl::UnixEpoch();
};

// "checkpoint-<step>-<file name>".
std::string CheckpointArtifactName(const store::CheckpointRecord& c);

// The artifacts of `trial_id`, checkpoints by step then result.json.
// NotFound for an unknown trial. `checkpoints` may be null (none listed).
absl::StatusOr<std::vector<ArtifactInfo>> ListArtifacts(
    store::ExperimentStore* store, CheckpointStore* checkpoints,
    const std::string& trial_id);

// Finds artifact `name` of `trial_id` and streams its bytes to `sink` (in
// chunks; sink returns false to stop). `info` is filled before the first
// chunk. NotFound (naming the artifact) when there is none by that name;
// DataLoss when a stored checkpoint fails verification (set aside).
absl::Status ReadArtifact(
    store::ExperimentStore* store, CheckpointStore* checkpoints,
    const std::string& trial_id, const std::string& name,
    const std::function<bool(const ArtifactInfo&)>& on_info,
    const std::function<bool(absl::string_view)>& sink);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_ARTIFACTS_H_
