// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/autocast.h
//
// Mixed precision (bf16 autocast) in one place, for CPU and CUDA alike, with
// the LibTorch 1.13 and >= 2.4 spellings of the autocast API.
//
//   * AutocastGuard: scoped bf16 autocast for one device type (the trainer
//     wraps every forward in it when a trial sets `bf16: true`).
//   * AutocastDtype(t): the lower-precision dtype autocast would use for ops
//     on `t`'s device right now, if autocast is on there. Custom autograd
//     Functions are not autocast-aware (autocast only rewrites the ops on its
//     lists), so worker/model/ops casts the expert GEMM inputs to this dtype
//     itself; otherwise the expert GEMMs would silently stay float32.
//
// The same code runs on CPU (CPU autocast exists in LibTorch 1.13 and 2.x),
// so CI trains in bf16 through exactly the lines a GPU run takes.
#ifndef SMOE_WORKER_MODEL_AUTOCAST_H_
#define SMOE_WORKER_MODEL_AUTOCAST_H_

#include <torch/types.h>

#include <optional>

namespace smoe::model {

// Scoped bf16 autocast on `device`'s type (CPU or CUDA); a no-op when
// `enabled` is false. Restores the previous state and clears autocast's
// weight-cast cache on exit. Thread-local, like autocast itself.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  bool cuda_ = false;
  bool previous_ = false;
  at::ScalarType previous_dtype_ = at::kBFloat16;
};

// The dtype autocast lowers matmuls to on `t`'s device, or nullopt when
// autocast is off there (or `t` is not a floating-point CPU/CUDA tensor).
std::optional<at::ScalarType> AutocastDtype(const torch::Tensor& t);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_AUTOCAST_H_
