// Copyright 2026 SMoE Lab authors.
#include "worker/model/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace smoe::model {
namespace {

#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define SMOE_AUTOCAST_DEVICE_API 1
#endif

bool Enabled(bool cuda) {
#if SMOE_AUTOCAST_DEVICE_API
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

void SetEnabled(bool cuda, bool on) {
#if SMOE_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
#else
  if (cuda) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

at::ScalarType Dtype(bool cuda) {
#if SMOE_AUTOCAST_DEVICE_API
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype()
              : at::autocast::get_autocast_cpu_dtype();
#endif
}

void SetDtype(bool cuda, at::ScalarType t) {
#if SMOE_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
#endif
}

}  // namespace

AutocastGuard::AutocastGuard(const torch::Device& device, bool enabled)
    : enabled_(enabled), cuda_(device.is_cuda()) {
  if (!enabled_) return;
  previous_ = Enabled(cuda_);
  previous_dtype_ = Dtype(cuda_);
  SetEnabled(cuda_, true);
  SetDtype(cuda_, at::kBFloat16);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  SetEnabled(cuda_, previous_);
  SetDtype(cuda_, previous_dtype_);
  at::autocast::clear_cache();
}

std::optional<at::ScalarType> AutocastDtype(const torch::Tensor& t) {
  if (!t.defined() || !t.is_floating_point()) return std::nullopt;
  if (!t.is_cpu() && !t.is_cuda()) return std::nullopt;
  const bool cuda = t.is_cuda();
  if (!Enabled(cuda)) return std::nullopt;
  return Dtype(cuda);
}

}  // namespace smoe::model
