// Copyright 2026 SMoE Lab authors.
//
// File: kernels/grouped_gemm/grouped_gemm.h
//
// Grouped expert GEMM over the expert-major buffer of kernels/permute: expert
// e owns rows [expert_offsets[e], expert_offsets[e + 1]) of A, and
//   forward:      C_e = A_e . B_e        B [E, k, n] row-major   (trans_b = 0)
//                 C_e = A_e . B_e^T      B [E, n, k] row-major   (trans_b = 1,
//                                        the dgrad of the forward)
//   weight grad:  dB_e = A_e^T . dC_e    dB [E, k, n]; experts with no rows
//                                        get dB_e = 0
// A [rows, k], C / dC [rows, n], all row-major and contiguous. Math in f32
// (cuBLAS CUBLAS_COMPUTE_32F; bf16 inputs/outputs for DType::kBFloat16).
//
// Variants (every variant is checked against the same reference):
//   kGroupedBatched: one cublasGemmGroupedBatchedEx call (CUDA >= 12.5) with
//                    one group per non-empty expert;
//   kPerExpertLoop:  one cublasGemmEx per non-empty expert (the baseline).
//
// expert_offsets is a HOST array [num_experts + 1] (cuBLAS takes problem sizes
// on the host; callers copy the router's counts back once per layer).
//
// REQUIRES: num_experts >= 1, k >= 1, n >= 1, offsets non-decreasing from 0,
// every dimension < 2^31.
// Thread-safety: a cublasHandle_t must not be used by two threads at once.
#ifndef SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_H_
#define SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/common/dtype.h"

#if defined(SMOE_WITH_CUDA)
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {

enum class GroupedGemmVariant : int { kGroupedBatched = 0, kPerExpertLoop = 1 };

// Returns InvalidArgument naming the field and value for bad sizes/offsets.
absl::Status ValidateGroupedGemmArgs(const int64_t* expert_offsets,
                                     int num_experts, int64_t k, int64_t n);

// CPU references (float, simple loops; host pointers).
void GroupedGemmRef(const float* a, const float* b, float* c,
                    const int64_t* expert_offsets, int num_experts, int64_t k,
                    int64_t n, bool trans_b);
void GroupedGemmWeightGradRef(const float* a, const float* dc, float* db,
                              const int64_t* expert_offsets, int num_experts,
                              int64_t k, int64_t n);

#if defined(SMOE_WITH_CUDA)
// Bytes of device workspace the GPU functions need (pointer arrays).
size_t GroupedGemmWorkspaceBytes(int num_experts);

// GPU versions (device a/b/c, host offsets). Enqueued on `stream` (the handle
// is bound to it). kGroupedBatched returns Unimplemented when this cuBLAS
// does not support the dtype in grouped mode; callers may fall back to
// kPerExpertLoop. `dtype` is kFloat32 or kBFloat16 (else InvalidArgument
// naming it).
absl::Status GroupedGemm(cublasHandle_t handle, const void* a, const void* b,
                         void* c, DType dtype, const int64_t* expert_offsets,
                         int num_experts, int64_t k, int64_t n, bool trans_b,
                         GroupedGemmVariant variant, void* workspace,
                         cudaStream_t stream);
absl::Status GroupedGemmWeightGrad(cublasHandle_t handle, const void* a,
                                   const void* dc, void* db, DType dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   GroupedGemmVariant variant, void* workspace,
                                   cudaStream_t stream);
#endif  // SMOE_WITH_CUDA

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_H_
