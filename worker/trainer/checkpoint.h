// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/checkpoint.h
//
// Checkpoint files of smoe-trainer. Layout (little-endian):
//   "SMOECKPT" | u32 version (1) | u64 meta_len | meta (JSON text)
//   | u64 names_len | tensor names, one per line
//   | u64 payload_len | payload (torch::serialize archive, keys t0, t1, ...)
//   | u64 FNV-1a-64 of meta + names + payload
// WriteCheckpoint is atomic and keeps the previous checkpoint until the new
// one is durable: it writes PATH.tmp and fsyncs it, renames PATH to PATH.prev,
// renames PATH.tmp to PATH and fsyncs the directory. A crash at any point
// leaves a complete checkpoint at PATH or (between the renames) at PATH.prev.
// Any truncation or corruption is reported by ReadCheckpoint as DataLoss; it
// never returns a partial checkpoint. SetAsideCheckpoint renames a file that
// failed verification to PATH.corrupt-<unix seconds> (kept for inspection,
// never deleted) so the next start does not trip on it again.
#ifndef SMOE_WORKER_TRAINER_CHECKPOINT_H_
#define SMOE_WORKER_TRAINER_CHECKPOINT_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace smoe::trainer {

struct Checkpoint {
  std::string meta_json;
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // CPU tensors
};

// Writes `ckpt` to `path` atomically, the old `path` becoming
// PreviousCheckpointPath(path). Tensors may live on any device.
absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& ckpt);

// PATH.prev: the checkpoint before the latest one.
std::string PreviousCheckpointPath(const std::string& path);

// Renames `path` to `path`.corrupt-<unix seconds> (a suffix -N is added if
// that exists). Returns the new name.
absl::StatusOr<std::string> SetAsideCheckpoint(const std::string& path);

// Reads `path`. NotFound when it does not exist; DataLoss (naming the path
// and what is wrong) when it is truncated or corrupt. Tensors come back on
// the CPU.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_CHECKPOINT_H_
