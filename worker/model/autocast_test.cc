// Copyright 2026 SMoE Lab authors.
//
// AutocastGuard / AutocastDtype (autocast.h). The CUDA side of the guard only
// sets thread-local autocast state, so it runs, and is checked, without a GPU:
// a bf16 run on a GPU turns on CUDA autocast in bf16, leaves CPU autocast
// alone, and restores both (docs/gpu-only-lines.md: no device branch that CI
// never takes).
#include "worker/model/autocast.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace smoe::model {
namespace {

#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool CudaAutocastOn() { return at::autocast::is_autocast_enabled(at::kCUDA); }
at::ScalarType CudaAutocastDtype() {
  return at::autocast::get_autocast_dtype(at::kCUDA);
}
#else
bool CudaAutocastOn() { return at::autocast::is_enabled(); }
at::ScalarType CudaAutocastDtype() {
  return at::autocast::get_autocast_gpu_dtype();
}
#endif

TEST(AutocastGuardTest, CudaDeviceTurnsOnCudaAutocastOnlyAndRestores) {
  const torch::Tensor cpu = torch::ones({2});
  ASSERT_FALSE(CudaAutocastOn());
  const at::ScalarType before = CudaAutocastDtype();
  {
    AutocastGuard guard(torch::Device(torch::kCUDA, 0), /*enabled=*/true);
    EXPECT_TRUE(CudaAutocastOn());
    EXPECT_EQ(CudaAutocastDtype(), at::kBFloat16);
    EXPECT_FALSE(AutocastDtype(cpu).has_value()) << "CPU autocast turned on";
  }
  EXPECT_FALSE(CudaAutocastOn());
  EXPECT_EQ(CudaAutocastDtype(), before);
}

TEST(AutocastGuardTest, CpuDeviceTurnsOnCpuAutocastOnlyAndRestores) {
  const torch::Tensor cpu = torch::ones({2});
  EXPECT_FALSE(AutocastDtype(cpu).has_value());
  {
    AutocastGuard guard(torch::Device(torch::kCPU), /*enabled=*/true);
    ASSERT_TRUE(AutocastDtype(cpu).has_value());
    EXPECT_EQ(*AutocastDtype(cpu), at::kBFloat16);
    EXPECT_FALSE(CudaAutocastOn());
    // Integer tensors are never autocast.
    EXPECT_FALSE(AutocastDtype(torch::ones({2}, torch::kInt64)).has_value());
  }
  EXPECT_FALSE(AutocastDtype(cpu).has_value());
}

TEST(AutocastGuardTest, DisabledGuardChangesNothing) {
  {
    AutocastGuard cuda(torch::Device(torch::kCUDA, 0), /*enabled=*/false);
    AutocastGuard cpu(torch::Device(torch::kCPU), /*enabled=*/false);
    EXPECT_FALSE(CudaAutocastOn());
    EXPECT_FALSE(AutocastDtype(torch::ones({2})).has_value());
  }
  EXPECT_FALSE(CudaAutocastOn());
}

}  // namespace
}  // namespace smoe::model
