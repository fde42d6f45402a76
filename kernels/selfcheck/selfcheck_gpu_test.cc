// Copyright 2026 SMoE Lab authors.
//
// kernels/selfcheck on a GPU (label gpu; skips without a device): every
// kernel check passes and fails under fault injection, the device rates are
// positive, NCCL over every visible GPU passes. Not yet run: no GPU was lent
// to the session that wrote it.
#include <cuda_runtime_api.h>

#include "gtest/gtest.h"
#include "kernels/common/device.h"
#include "kernels/selfcheck/selfcheck.h"

namespace smoe::kernels {
namespace {

using CheckFn =
    absl::StatusOr<KernelCheckResult> (*)(const KernelCheckOptions&);

TEST(SelfCheckGpuTest, KernelChecksPassAndCatchInjectedFaults) {
  SMOE_SKIP_WITHOUT_GPU();
  for (CheckFn fn : {&CheckRouterTopKKernels, &CheckPermuteKernels,
                     &CheckGroupedGemmKernels}) {
    KernelCheckOptions o;
    absl::StatusOr<KernelCheckResult> r = fn(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->ok()) << "seed " << r->seed << ": " << r->first_failure();
    EXPECT_FALSE(r->comparisons.empty());
    o.quick = true;
    o.inject_fault = true;
    r = fn(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->ok());
    EXPECT_FALSE(r->first_failure().empty());
  }
}

TEST(SelfCheckGpuTest, DeviceRatesArePositive) {
  SMOE_SKIP_WITHOUT_GPU();
  absl::StatusOr<DeviceRates> r = MeasureDeviceRates(0, /*quick=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->copy_gbps, 0);
  EXPECT_GT(r->dense_bf16_tflops, 0);
  EXPECT_GT(r->grouped_gemm_tflops, 0);
  EXPECT_GT(r->permute_gbps, 0);
  EXPECT_GT(r->combine_gbps, 0);
}

TEST(SelfCheckGpuTest, NcclOverEveryVisibleGpu) {
  SMOE_SKIP_WITHOUT_GPU();
  CommCheckOptions o;
  o.backend = CommBackend::kNccl;
  o.world_size = CudaDeviceCount();
  absl::StatusOr<CommCheckResult> r = CheckCommunicators(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->backend, "nccl");
}

}  // namespace
}  // namespace smoe::kernels
