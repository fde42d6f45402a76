// Copyright 2026 SMoE Lab authors.
//
// The host side of the CUDA kernels that needs no GPU (CUDA builds only,
// label unit): the CUDA/cuBLAS error -> absl::Status mapping every wrapper
// returns through (cuda_status.cc), and the wrappers' own argument checks,
// which return before any CUDA call. What is left GPU-only in the wrappers is
// the launch itself (docs/gpu-only-lines.md).
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "kernels/common/cuda_status.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::kernels {
namespace {

void ExpectStatus(const absl::Status& s, absl::StatusCode code,
                  const std::string& prefix) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), prefix)) << s;
}

TEST(CudaStatusTest, RuntimeErrorsMapToCodesAndNameTheStep) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "Step").ok());
  ExpectStatus(CudaStatus(cudaErrorInvalidValue, "Step"),
               absl::StatusCode::kInvalidArgument,
               "Step: cudaErrorInvalidValue: ");
  ExpectStatus(CudaStatus(cudaErrorInvalidConfiguration, "Step"),
               absl::StatusCode::kInvalidArgument,
               "Step: cudaErrorInvalidConfiguration: ");
  ExpectStatus(CudaStatus(cudaErrorMemoryAllocation, "Step"),
               absl::StatusCode::kResourceExhausted,
               "Step: cudaErrorMemoryAllocation: ");
  ExpectStatus(CudaStatus(cudaErrorLaunchFailure, "Step"),
               absl::StatusCode::kInternal, "Step: cudaErrorLaunchFailure: ");
}

TEST(CudaStatusTest, CublasErrorsMapToCodesAndNameTheStep) {
  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "Gemm").ok());
  ExpectStatus(CublasStatus(CUBLAS_STATUS_INVALID_VALUE, "Gemm"),
               absl::StatusCode::kInvalidArgument,
               "Gemm: CUBLAS_STATUS_INVALID_VALUE: ");
  // kGroupedBatched falls back to the per-expert loop on Unimplemented.
  ExpectStatus(CublasStatus(CUBLAS_STATUS_NOT_SUPPORTED, "Gemm"),
               absl::StatusCode::kUnimplemented,
               "Gemm: CUBLAS_STATUS_NOT_SUPPORTED: ");
  ExpectStatus(CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "Gemm"),
               absl::StatusCode::kResourceExhausted,
               "Gemm: CUBLAS_STATUS_ALLOC_FAILED: ");
  ExpectStatus(CublasStatus(CUBLAS_STATUS_EXECUTION_FAILED, "Gemm"),
               absl::StatusCode::kInternal,
               "Gemm: CUBLAS_STATUS_EXECUTION_FAILED: ");
}

// Each call below fails a check of its wrapper after the shared validation
// passed, so it returns before touching the device: the pointers are host
// dummies that are never dereferenced.
TEST(HostWrappersTest, NullArgumentsAreRefusedBeforeAnyCudaCall) {
  int32_t i32[8] = {};
  float f32[8] = {};
  const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

  ExpectStatus(RouterTopK(f32, 2, 4, 2, RouterGating::kRenormalized, i32, f32,
                          /*num_tokens_per_expert=*/nullptr, i32, nullptr),
               kInvalid, "num_tokens_per_expert and expert_offsets");

  PermutePlan plan;
  plan.num_tokens = 2;
  plan.top_k = 2;
  plan.num_experts = 4;
  ExpectStatus(Permute(f32, DType::kFloat32, 2, plan, f32, nullptr), kInvalid,
               "plan.sorted_idx/dest_idx are null");
  plan.sorted_idx = i32;
  plan.dest_idx = i32;
  ExpectStatus(BuildPermutePlan(i32, plan, i32, /*workspace=*/nullptr, nullptr),
               kInvalid, "expert_offsets, num_tokens_per_expert and workspace");
  ExpectStatus(Combine(f32, /*topk_weights=*/nullptr, DType::kFloat32, 2, plan,
                       f32, nullptr),
               kInvalid, "topk_weights is null");
  ExpectStatus(CombineBackward(f32, f32, /*topk_weights=*/nullptr,
                               DType::kBFloat16, 2, plan, f32, f32, nullptr),
               kInvalid, "topk_weights is null");
}

TEST(HostWrappersTest, WorkspaceSizes) {
  EXPECT_EQ(GroupedGemmWorkspaceBytes(8), 3 * sizeof(void*) * 8);
  EXPECT_GE(PermutePlanWorkspaceBytes(/*num_tokens=*/1024, /*top_k=*/2,
                                      /*num_experts=*/8),
            8 * sizeof(int32_t));
  EXPECT_GE(PermutePlanWorkspaceBytes(0, 1, 4), 4 * sizeof(int32_t));
}

}  // namespace
}  // namespace smoe::kernels
