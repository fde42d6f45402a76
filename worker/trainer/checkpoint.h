// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/checkpoint.h
//
// Checkpoint files of smoe-trainer. Layout (little-endian):
//   "SMOECKPT" | u32 version (1) | u64 meta_len | meta (JSON text)
//   | u64 names_len | tensor names, one per line
//   | u64 payload_len | payload (torch::serialize archive, keys t0, t1, ...)
//   | u64 FNV-1a-64 of meta + names + payload
// WriteCheckpoint is atomic: it writes PATH.tmp, fsyncs it and renames it
// over PATH, so a crash leaves either the old or the new checkpoint. Any
// truncation or corruption is reported by ReadCheckpoint as DataLoss; it never
// returns a partial checkpoint.
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

// Writes `ckpt` to `path` atomically. Tensors may live on any device.
absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& ckpt);

// Reads `path`. NotFound when it does not exist; DataLoss (naming the path
// and what is wrong) when it is truncated or corrupt. Tensors come back on
// the CPU.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_CHECKPOINT_H_
