// Copyright 2026 SMoE Lab authors.
//
// File: kernels/grouped_gemm/grouped_gemm_launch.h
//
// cuBLAS calls behind grouped_gemm.h, defined in grouped_gemm.cu (no absl, no
// torch). A failure reports which library failed; grouped_gemm.cc turns it
// into absl::Status.
#ifndef SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_LAUNCH_H_
#define SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_LAUNCH_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace smoe::kernels {

struct GemmLaunchResult {
  cudaError_t cuda = cudaSuccess;
  cublasStatus_t cublas = CUBLAS_STATUS_SUCCESS;
};

// mode: 0 = forward, 1 = forward with trans_b, 2 = weight grad.
// variant: 0 = grouped batched, 1 = per-expert loop. dtype: 0 f32, 1 bf16.
// math: 0 = CUBLAS_COMPUTE_32F, 1 = CUBLAS_COMPUTE_32F_FAST_TF32 for f32
// (bf16 always computes in CUBLAS_COMPUTE_32F).
// Variant 0 built against cuBLAS < 12.5 returns CUBLAS_STATUS_NOT_SUPPORTED
// before doing anything.
GemmLaunchResult LaunchGroupedGemm(cublasHandle_t handle, const void* a,
                                   const void* b, void* c, int dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   int mode, int variant, int math,
                                   void* workspace, cudaStream_t stream);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_LAUNCH_H_
