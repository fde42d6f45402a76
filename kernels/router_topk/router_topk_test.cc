// Copyright 2026 SMoE Lab authors.
//
// GPU router kernel vs the CPU reference on fresh random inputs (label gpu;
// skips without a device): the cases of router_topk_check.h.
#include "kernels/router_topk/router_topk.h"

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernels/common/device.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/kernel_check.h"
#include "kernels/router_topk/router_topk_check.h"

namespace smoe::kernels {
namespace {

// router_topk_check.h's comparisons, each one an expectation.
void CheckOne(int64_t t, int e, int k, RouterGating g, bool tied,
              uint32_t seed) {
  SCOPED_TRACE(testing::Message()
               << "T=" << t << " E=" << e << " k=" << k
               << " g=" << static_cast<int>(g) << " tied=" << tied);
  std::mt19937 rng(seed);  // fresh inputs per run of the grid
  std::vector<KernelComparison> out;
  const absl::Status s = CheckRouterTopK(RouterTopKCheckCase{t, e, k, g, tied},
                                         rng, /*inject_fault=*/false, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.size(), 5u);
  EXPECT_EQ(ComparisonFailures(out), "");
}

TEST(RouterTopKGpuTest, ShapeGridMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64, 200}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        for (RouterGating g :
             {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
          CheckOne(t, e, k, g, /*tied=*/true, seed + t + e + k);
          CheckOne(t, e, k, g, /*tied=*/false, seed + 7 * t + e + k);
        }
      }
    }
  }
}

// The shapes a review picks: experts not a multiple of 32 (the padding
// lanes), k = experts, 256 experts (the limit: 8 per lane), one token.
TEST(RouterTopKGpuTest, EdgeShapesMatchReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  struct Shape {
    int64_t t;
    int e, k;
  };
  for (const Shape& s : {Shape{0, 33, 33}, Shape{1, 256, 1}, Shape{1, 256, 256},
                         Shape{5, 33, 33}, Shape{3, 256, 8}, Shape{37, 31, 31},
                         Shape{100, 255, 3}, Shape{9, 97, 97}}) {
    for (RouterGating g :
         {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
      CheckOne(s.t, s.e, s.k, g, /*tied=*/true, seed + s.t + s.e + s.k);
      CheckOne(s.t, s.e, s.k, g, /*tied=*/false, seed + 7 * s.t + s.e);
    }
  }
}

// 2048 blocks x 4 warps cover 8192 tokens per pass of the grid-stride loop:
// 8192 + 37 tokens run its tail, and with 3 experts every block adds to the
// same global counters.
TEST(RouterTopKGpuTest, GridStrideTailMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  CheckOne(8192 + 37, 3, 2, RouterGating::kRenormalized, /*tied=*/false, seed);
}

// The check can fail: a corrupted output (check's fault injection) fails
// every comparison.
TEST(RouterTopKGpuTest, CheckCatchesACorruptedOutput) {
  SMOE_SKIP_WITHOUT_GPU();
  std::mt19937 rng(1);
  std::vector<KernelComparison> out;
  ASSERT_TRUE(CheckRouterTopK(RouterTopKCheckCase{7, 8, 2}, rng,
                              /*inject_fault=*/true, &out)
                  .ok());
  ASSERT_EQ(out.size(), 5u);
  for (const KernelComparison& c : out) EXPECT_GT(c.num_bad, 0) << c.what;
}

TEST(RouterTopKGpuTest, RejectsBadArguments) {
  SMOE_SKIP_WITHOUT_GPU();
  DeviceBuffer<float> d(16);
  DeviceBuffer<int32_t> i(16);
  const absl::Status s =
      RouterTopK(d.get(), 2, 300, 2, RouterGating::kRenormalized, i.get(),
                 d.get(), i.get(), i.get(), nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smoe::kernels
