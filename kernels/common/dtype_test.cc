// Copyright 2026 SMoE Lab authors.
//
// The one DType of kernels/ (dtype.h): sizes, names, the values the .cu
// launchers rely on, and (CUDA builds) that the dispatch kernels' host
// wrappers refuse a dtype they are not instantiated for before touching the
// device, so these run without a GPU.
#include "kernels/common/dtype.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

#if defined(SMOE_WITH_CUDA)
#include "kernels/common/cuda_status.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#endif

namespace smoe::kernels {
namespace {

constexpr DType kAll[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat64,
                          DType::kFloat16, DType::kInt32,    DType::kInt64};

TEST(DTypeTest, SizesAndNames) {
  const size_t sizes[] = {4, 2, 8, 2, 4, 8};
  const char* names[] = {"float32", "bfloat16", "float64",
                         "float16", "int32",    "int64"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(DTypeSize(kAll[i]), sizes[i]) << i;
    EXPECT_STREQ(DTypeName(kAll[i]), names[i]) << i;
  }
  EXPECT_EQ(DTypeSize(static_cast<DType>(99)), 0u);
  EXPECT_STREQ(DTypeName(static_cast<DType>(99)), "unknown");
  static_assert(DTypeSize(DType::kBFloat16) == 2, "usable in constexpr");
}

// permute.cu and grouped_gemm.cu receive static_cast<int>(dtype) and test
// 0 (f32) vs 1 (bf16).
TEST(DTypeTest, LauncherValuesAreStable) {
  EXPECT_EQ(static_cast<int>(DType::kFloat32), 0);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), 1);
  for (DType d : kAll) {
    EXPECT_EQ(IsKernelFloatDType(d),
              d == DType::kFloat32 || d == DType::kBFloat16)
        << DTypeName(d);
  }
}

#if defined(SMOE_WITH_CUDA)
void ExpectDTypeError(const absl::Status& s, const char* name) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(),
            std::string("dtype=") + name + ": must be float32 or bfloat16");
}

TEST(DTypeTest, KernelWrappersRefuseNonFloatDTypes) {
  EXPECT_TRUE(CheckKernelFloatDType(DType::kFloat32).ok());
  EXPECT_TRUE(CheckKernelFloatDType(DType::kBFloat16).ok());
  ExpectDTypeError(CheckKernelFloatDType(DType::kInt32), "int32");

  // An empty plan passes every other check, so only the dtype can fail; the
  // wrappers return before any CUDA call (no device needed).
  PermutePlan plan;
  plan.num_tokens = 0;
  ExpectDTypeError(
      Combine(nullptr, nullptr, DType::kFloat64, 8, plan, nullptr, nullptr),
      "float64");
  ExpectDTypeError(CombineBackward(nullptr, nullptr, nullptr, DType::kInt64, 8,
                                   plan, nullptr, nullptr, nullptr),
                   "int64");
  ExpectDTypeError(
      PermuteBackward(nullptr, DType::kFloat16, 8, plan, nullptr, nullptr),
      "float16");
  const int64_t offsets[] = {0, 0};
  ExpectDTypeError(
      GroupedGemm(nullptr, nullptr, nullptr, nullptr, DType::kInt32, offsets, 1,
                  4, 4, /*trans_b=*/false, GroupedGemmVariant::kPerExpertLoop,
                  nullptr, nullptr),
      "int32");
  ExpectDTypeError(GroupedGemmWeightGrad(nullptr, nullptr, nullptr, nullptr,
                                         DType::kFloat64, offsets, 1, 4, 4,
                                         GroupedGemmVariant::kPerExpertLoop,
                                         nullptr, nullptr),
                   "float64");
}
#endif  // SMOE_WITH_CUDA

}  // namespace
}  // namespace smoe::kernels
