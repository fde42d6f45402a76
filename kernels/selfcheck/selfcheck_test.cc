// Copyright 2026 SMoE Lab authors.
//
// kernels/selfcheck on any machine (label unit): the version probe, the
// communicator checks over LocalCommunicator (passing, and failing under
// fault injection), and the GPU checks refusing cleanly without a device.
#include "kernels/selfcheck/selfcheck.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/common/device.h"

namespace smoe::kernels {
namespace {

TEST(SelfCheckTest, FormatCudaVersion) {
  EXPECT_EQ(FormatCudaVersion(12040), "12.4");
  EXPECT_EQ(FormatCudaVersion(13000), "13.0");
  EXPECT_EQ(FormatCudaVersion(0), "");
}

TEST(SelfCheckTest, StackInfoAgreesWithDeviceDiscovery) {
  const CudaStackInfo info = GetCudaStackInfo();
  EXPECT_EQ(info.built_with_cuda, BuiltWithCuda());
  EXPECT_EQ(info.built_with_nccl, BuiltWithNccl());
  EXPECT_EQ(info.device_count, CudaDeviceCount());
  EXPECT_EQ(info.devices.size(), static_cast<size_t>(info.device_count));
  if (info.device_count == 0) {
    EXPECT_FALSE(info.device_error.empty());
  }
  if (info.built_with_cuda) {
    EXPECT_GT(info.compiled_cuda_version, 0);
    EXPECT_GT(info.runtime_version, 0);
  } else {
    EXPECT_EQ(info.runtime_version, 0);
  }
}

TEST(SelfCheckTest, LocalCommunicatorsPassThePayloadChecks) {
  for (int world : {1, 2, 3}) {
    CommCheckOptions o;
    o.world_size = world;
    o.op_timeout_ms = 10000;
    absl::StatusOr<CommCheckResult> r = CheckCommunicators(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->ok());
    EXPECT_EQ(r->backend, "local");
    EXPECT_EQ(r->world_size, world);
    EXPECT_EQ(r->allreduce_elements, 2 * world * o.allreduce_count);
    EXPECT_EQ(r->allreduce_wrong, 0);
    if (world > 1) {
      EXPECT_GT(r->alltoall_elements, 0);
    }
    EXPECT_EQ(r->alltoall_wrong, 0);
  }
}

TEST(SelfCheckTest, InjectedFaultIsCaught) {
  CommCheckOptions o;
  o.world_size = 2;
  o.op_timeout_ms = 10000;
  o.inject_fault = true;
  absl::StatusOr<CommCheckResult> r = CheckCommunicators(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->ok());
  EXPECT_GT(r->allreduce_wrong, 0);
}

TEST(SelfCheckTest, BadWorldSizeIsInvalidArgument) {
  CommCheckOptions o;
  o.world_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(CheckCommunicators(o).status()));
}

TEST(SelfCheckTest, GpuChecksRefuseWithoutADevice) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present";
  KernelCheckOptions k;
  EXPECT_FALSE(CheckRouterTopKKernels(k).ok());
  EXPECT_FALSE(CheckPermuteKernels(k).ok());
  EXPECT_FALSE(CheckGroupedGemmKernels(k).ok());
  EXPECT_FALSE(MeasureDeviceRates(0, /*quick=*/true).ok());
  CommCheckOptions c;
  c.backend = CommBackend::kNccl;
  c.world_size = 1;
  c.op_timeout_ms = 5000;
  EXPECT_FALSE(CheckCommunicators(c).ok());
}

TEST(SelfCheckTest, ResultSummaries) {
  KernelCheckResult r;
  EXPECT_TRUE(r.ok());
  KernelComparison a;
  a.what = "a";
  a.max_abs_err = 1e-6;
  KernelComparison b;
  b.what = "b";
  b.exact = true;
  b.max_abs_err = 5;  // exact comparisons do not count
  b.num_bad = 2;
  b.message = "2 of 4 elements differ";
  r.comparisons = {a, b};
  EXPECT_FALSE(r.ok());
  EXPECT_DOUBLE_EQ(r.max_abs_err(), 1e-6);
  EXPECT_EQ(r.first_failure(), "b: 2 of 4 elements differ");
}

TEST(SelfCheckTest, OutputComparisons) {
  const std::vector<float> ref = {1.0f, -2.0f, 3.0f};
  KernelComparison c =
      CompareCloseOutput("close", ref, {1.0f, -2.0f, 3.0f}, 1e-6, 1e-5);
  EXPECT_EQ(c.what, "close");
  EXPECT_FALSE(c.exact);
  EXPECT_EQ(c.elements, 3);
  EXPECT_EQ(c.num_bad, 0);
  EXPECT_EQ(c.message, "");
  c = CompareCloseOutput("close", ref, {1.0f, -2.5f, 3.0f}, 1e-6, 1e-5);
  EXPECT_EQ(c.num_bad, 1);
  EXPECT_DOUBLE_EQ(c.max_abs_err, 0.5);
  EXPECT_NE(c.message.find("first at 1"), std::string::npos) << c.message;
  c = CompareCloseOutput("close", ref, {1.0f}, 1e-6, 1e-5);
  EXPECT_EQ(c.num_bad, 3);
  EXPECT_EQ(c.message, "size 1 != 3");

  c = CompareExactOutput("exact", ref, {1.0f, -2.0f, 3.0000002f});
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.num_bad, 1);
  EXPECT_EQ(c.message, "1 of 3 elements differ (exact); first at 2");
  c = CompareExactOutput("exact", std::vector<int32_t>{4, 5},
                         std::vector<int32_t>{4, 5});
  EXPECT_EQ(c.num_bad, 0);
  EXPECT_EQ(c.elements, 2);
  c = CompareExactOutput("exact", std::vector<int32_t>{4, 5},
                         std::vector<int32_t>{4, 5, 6});
  EXPECT_EQ(c.num_bad, 2);
  EXPECT_EQ(c.message, "size 3 != 2");
  c = CompareExactOutput("exact", std::vector<int32_t>{4, 5},
                         std::vector<int32_t>{5, 4});
  EXPECT_EQ(c.message, "2 of 2 elements differ (exact); first at 0");
}

TEST(SelfCheckTest, DeviceRatesOptionsAreTheDocumentedShapes) {
  const DeviceRatesOptions full = DeviceRatesOptionsFor(3, /*quick=*/false);
  EXPECT_EQ(full.device, 3);
  EXPECT_EQ(full.warmup, 3);
  EXPECT_EQ(full.reps, 10);
  EXPECT_EQ(full.flush_bytes, int64_t{256} << 20);
  EXPECT_EQ(full.copy_bytes, int64_t{1} << 30);
  EXPECT_EQ(full.gemm_size, 8192);
  EXPECT_EQ(full.grouped_tokens, 16384);
  EXPECT_EQ(full.grouped_dim, 1024);
  EXPECT_EQ(full.permute_tokens, 16384);
  EXPECT_EQ(full.permute_hidden, 4096);
  const DeviceRatesOptions quick = DeviceRatesOptionsFor(0, /*quick=*/true);
  EXPECT_EQ(quick.warmup, 2);
  EXPECT_EQ(quick.reps, 5);
  EXPECT_EQ(quick.flush_bytes, int64_t{256} << 20);
  EXPECT_EQ(quick.copy_bytes, int64_t{256} << 20);
  EXPECT_EQ(quick.gemm_size, 4096);
  EXPECT_EQ(quick.grouped_tokens, 4096);
  EXPECT_EQ(quick.grouped_dim, 1024);
  EXPECT_EQ(quick.permute_tokens, 4096);
  EXPECT_EQ(quick.permute_hidden, 1024);
  EXPECT_TRUE(ValidateDeviceRatesOptions(full).ok());
  EXPECT_TRUE(ValidateDeviceRatesOptions(quick).ok());
}

TEST(SelfCheckTest, BadDeviceRatesOptionsNameTheField) {
  DeviceRatesOptions o = DeviceRatesOptionsFor(0, /*quick=*/true);
  o.warmup = 0;  // allowed
  EXPECT_TRUE(ValidateDeviceRatesOptions(o).ok());
  o.warmup = -1;
  absl::Status s = ValidateDeviceRatesOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("warmup=-1"), std::string::npos) << s;
  o = DeviceRatesOptionsFor(0, /*quick=*/true);
  o.gemm_size = 0;
  s = MeasureDeviceRates(o).status();  // refused before any CUDA call
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("gemm_size=0: must be positive"),
            std::string::npos)
      << s;
  o = DeviceRatesOptionsFor(0, /*quick=*/true);
  o.permute_hidden = -4;
  s = ValidateDeviceRatesOptions(o);
  EXPECT_NE(s.message().find("permute_hidden=-4: must not be negative"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace smoe::kernels
