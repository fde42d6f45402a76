// Copyright 2026 SMoE Lab authors.
//
// GPU plan builder, permute, unpermute, combine and backward vs the CPU
// reference on fresh random inputs (label gpu; skips without a device): the
// cases of permute_check.h.
#include "kernels/permute/permute.h"

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_check.h"
#include "kernels/permute/permute_check.h"

namespace smoe::kernels {
namespace {

// permute_check.h's comparisons (bf16 included), each one an expectation.
void CheckOne(int64_t t, int e, int k, int64_t hidden, bool one_expert,
              std::mt19937& rng) {
  SCOPED_TRACE(testing::Message() << "T=" << t << " E=" << e << " k=" << k
                                  << " hidden=" << hidden);
  std::vector<KernelComparison> out;
  const absl::Status s =
      CheckPermute(PermuteCheckCase{t, e, k, hidden, one_expert,
                                    /*with_bf16=*/true},
                   rng, /*inject_fault=*/false, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.size(), 11u);
  EXPECT_EQ(ComparisonFailures(out), "");
}

TEST(PermuteGpuTest, ShapeGridMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        // hidden 5 is not a multiple of any vector width; 256 takes the
        // 16-byte path.
        for (int64_t hidden : {5, 256}) {
          if (t * k * hidden > (int64_t{1} << 24)) continue;
          CheckOne(t, e, k, hidden, /*one_expert=*/false, rng);
        }
      }
    }
  }
  CheckOne(3000, 8, 1, 64, /*one_expert=*/true, rng);  // all to expert 0
  CheckOne(3000, 8, 2, 64, /*one_expert=*/true, rng);  // all to {0, 1}
}

// The shapes a review picks: zero tokens, one token, experts not a multiple
// of 32, k = experts, 256 experts, odd hidden sizes, a partial last chunk,
// several plan blocks adding to the same global counts.
TEST(PermuteGpuTest, EdgeShapesMatchReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  CheckOne(0, 33, 2, 5, /*one_expert=*/false, rng);
  CheckOne(1, 256, 256, 3, /*one_expert=*/false, rng);
  CheckOne(1, 33, 1, 1, /*one_expert=*/false, rng);
  CheckOne(37, 33, 33, 4, /*one_expert=*/false, rng);
  CheckOne(300, 100, 7, 8, /*one_expert=*/false, rng);
  CheckOne(2100, 5, 2, 2, /*one_expert=*/false, rng);  // 5 chunks, 2 blocks
  CheckOne(4500, 3, 3, 1, /*one_expert=*/true, rng);   // 14 chunks, 4 blocks
}

// The check can fail: a corrupted output (the check's fault injection)
// fails every comparison.
TEST(PermuteGpuTest, CheckCatchesACorruptedOutput) {
  SMOE_SKIP_WITHOUT_GPU();
  std::mt19937 rng(1);
  std::vector<KernelComparison> out;
  ASSERT_TRUE(CheckPermute(PermuteCheckCase{7, 8, 2, 5}, rng,
                           /*inject_fault=*/true, &out)
                  .ok());
  ASSERT_EQ(out.size(), 11u);
  for (const KernelComparison& c : out) EXPECT_GT(c.num_bad, 0) << c.what;
}

}  // namespace
}  // namespace smoe::kernels
