// Copyright 2026 SMoE Lab authors.
//
// GPU grouped GEMM (both variants; f32 strict and TF32, bf16) vs the CPU
// reference on fresh random inputs (label gpu; skips without a device, and
// the grouped test skips where this cuBLAS lacks a grouped mode).
#include "kernels/grouped_gemm/grouped_gemm.h"

#include <cublas_v2.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_check.h"
#include "kernels/grouped_gemm/grouped_gemm_check.h"

namespace smoe::kernels {
namespace {

// Runs grouped_gemm_check.h's case with `variant` / `math`, each comparison
// an expectation. Sets *unsupported (and checks nothing else) when the first
// call returns Unimplemented: the grouped variant on a cuBLAS older than
// 12.5, or a dtype / compute type its grouped mode lacks. The caller decides
// whether that skips the test (a GTEST_SKIP here would only leave this
// helper).
void CheckOne(cublasHandle_t h, DType dtype, GroupedGemmVariant variant,
              GroupedGemmMath math, std::mt19937& rng, bool* unsupported) {
  SCOPED_TRACE(testing::Message()
               << DTypeName(dtype) << " variant " << static_cast<int>(variant)
               << " math " << static_cast<int>(math));
  std::vector<KernelComparison> out;
  std::string why_unsupported;
  const absl::Status s =
      CheckGroupedGemm(h, GroupedGemmCheckCase{dtype, variant, math}, rng,
                       /*inject_fault=*/false, &out, &why_unsupported);
  *unsupported = !why_unsupported.empty();
  ASSERT_TRUE(s.ok()) << s;
  if (*unsupported) return;
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(ComparisonFailures(out), "");  // wgrad: the zeroed empty expert
}

class GroupedGemmGpuTest : public testing::Test {
 protected:
  void SetUp() override {
    SMOE_SKIP_WITHOUT_GPU();
    std::random_device rd;
    seed_ = rd();
    rng_.seed(seed_);
    ASSERT_EQ(cublasCreate(&h_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (h_ != nullptr) cublasDestroy(h_);
  }
  cublasHandle_t h_ = nullptr;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(GroupedGemmGpuTest, PerExpertLoopMatchesReference) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed_);
  bool unsupported = false;
  for (GroupedGemmMath m :
       {GroupedGemmMath::kStrictF32, GroupedGemmMath::kFastTf32}) {
    CheckOne(h_, DType::kFloat32, GroupedGemmVariant::kPerExpertLoop, m, rng_,
             &unsupported);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_FALSE(unsupported) << "cublasGemmEx is the baseline";
  }
  CheckOne(h_, DType::kBFloat16, GroupedGemmVariant::kPerExpertLoop,
           GroupedGemmMath::kStrictF32, rng_, &unsupported);
  EXPECT_FALSE(unsupported) << "cublasGemmEx is the baseline";
}

TEST_F(GroupedGemmGpuTest, GroupedBatchedMatchesReferenceOrFallsBack) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed_);
  bool unsupported = false;
  CheckOne(h_, DType::kFloat32, GroupedGemmVariant::kGroupedBatched,
           GroupedGemmMath::kStrictF32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (!CublasHasGroupedBatched(CUBLAS_VERSION)) {
    // Built against cuBLAS < 12.5: Unimplemented, and callers use the loop.
    EXPECT_TRUE(unsupported);
    GTEST_SKIP() << "cuBLAS " << CUBLAS_VERSION
                 << " has no cublasGemmGroupedBatchedEx (needs 12.5); "
                    "kernels fall back to kPerExpertLoop";
  }
  EXPECT_FALSE(unsupported) << "f32 is supported from cuBLAS 12.5";
  std::vector<std::string> skipped;
  CheckOne(h_, DType::kFloat32, GroupedGemmVariant::kGroupedBatched,
           GroupedGemmMath::kFastTf32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (unsupported) skipped.push_back("f32 with TF32");
  CheckOne(h_, DType::kBFloat16, GroupedGemmVariant::kGroupedBatched,
           GroupedGemmMath::kStrictF32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (unsupported) skipped.push_back("bf16");
  if (!skipped.empty()) {
    GTEST_SKIP() << "this cuBLAS has no grouped mode for: "
                 << absl::StrJoin(skipped, ", ")
                 << " (callers fall back to kPerExpertLoop)";
  }
}

// The check can fail: a corrupted output (the check's fault injection)
// fails every comparison.
TEST_F(GroupedGemmGpuTest, CheckCatchesACorruptedOutput) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    std::vector<KernelComparison> out;
    std::string unsupported;
    ASSERT_TRUE(
        CheckGroupedGemm(
            h_,
            GroupedGemmCheckCase{dtype, GroupedGemmVariant::kPerExpertLoop,
                                 GroupedGemmMath::kStrictF32},
            rng_, /*inject_fault=*/true, &out, &unsupported)
            .ok());
    ASSERT_EQ(unsupported, "");
    ASSERT_EQ(out.size(), 3u);
    for (const KernelComparison& c : out) EXPECT_GT(c.num_bad, 0) << c.what;
  }
}

}  // namespace
}  // namespace smoe::kernels
