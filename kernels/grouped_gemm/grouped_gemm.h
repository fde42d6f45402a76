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
// (cuBLAS CUBLAS_COMPUTE_32F; bf16 inputs/outputs for DType::kBFloat16);
// f32 problems may opt into TF32 tensor cores (GroupedGemmMath::kFastTf32).
//
// Variants (every variant is checked against the same reference):
//   kGroupedBatched: one cublasGemmGroupedBatchedEx call with one group per
//                    non-empty expert. The API exists from cuBLAS 12.5
//                    (CUBLAS_VERSION 120500); built against an older cuBLAS
//                    this variant returns Unimplemented without touching
//                    memory, and GroupedGemmFallbackVariant says to run
//                    kPerExpertLoop instead;
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
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/common/dtype.h"

#if defined(SMOE_WITH_CUDA)
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {

enum class GroupedGemmVariant : int { kGroupedBatched = 0, kPerExpertLoop = 1 };

// How products of DType::kFloat32 operands are computed (bf16 operands
// always use CUBLAS_COMPUTE_32F: bf16 inputs, f32 accumulation).
enum class GroupedGemmMath : int {
  // CUBLAS_COMPUTE_32F: IEEE f32 products (~50-60 TFLOP/s on an H100).
  // Matches the CPU reference to ~1e-5; the default.
  kStrictF32 = 0,
  // CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to TF32 (10-bit mantissa)
  // on tensor cores, f32 accumulation; several times faster, ~1e-3 relative
  // error per product. Opt in where that precision is enough.
  kFastTf32 = 1,
};

// The first cuBLAS with cublasGemmGroupedBatchedEx, in CUBLAS_VERSION's
// encoding (major * 10000 + minor * 100 + patch): 12.5.0.
inline constexpr int kCublasGroupedBatchedMinVersion = 120500;

// True when a build against cuBLAS `cublas_version` (CUBLAS_VERSION) has
// cublasGemmGroupedBatchedEx, i.e. can run kGroupedBatched.
constexpr bool CublasHasGroupedBatched(int cublas_version) {
  return cublas_version >= kCublasGroupedBatchedMinVersion;
}

// The variant to retry with after a GroupedGemm / GroupedGemmWeightGrad call
// with `tried` returned `status`: kPerExpertLoop when kGroupedBatched returned
// Unimplemented (cuBLAS older than 12.5 at build time, or a dtype / compute
// type its grouped mode lacks: CUBLAS_STATUS_NOT_SUPPORTED); std::nullopt
// otherwise (success, or an error the loop would only repeat). Pure host
// logic, no CUDA.
std::optional<GroupedGemmVariant> GroupedGemmFallbackVariant(
    GroupedGemmVariant tried, const absl::Status& status);

// The variant to try first for a problem (pure host logic, no CUDA): the
// per-expert loop once the mean non-empty expert's GEMM is large, the grouped
// call below that. Measured on an H200 (bench/results/gpu-h200-2026-11-28.md,
// bf16, E = 8): cublasGemmGroupedBatchedEx reached 28-42 % of dense bf16 at
// every size while one cublasGemmEx per expert reached 82-97 % at d = 4096;
// the loop won from 2.15 GFLOP per expert (2.0-2.4x at d = 4096), the grouped
// call up to 1.07 GFLOP (up to 3.5x at d = 128, where the loop pays a launch
// per expert). The threshold sits between: kGroupedLoopMinFlops. f32 and other
// GPUs are unmeasured. All experts empty: kGroupedBatched (nothing to launch).
inline constexpr double kGroupedLoopMinFlops = 1.5e9;
GroupedGemmVariant ChooseGroupedGemmVariant(const int64_t* expert_offsets,
                                            int num_experts, int64_t k,
                                            int64_t n);

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

// The calling thread's own cuBLAS handle: created on first use (the error of
// cublasCreate, every call, when that failed), destroyed when the thread
// exits. For callers without a handle of their own (worker/model/ops' route
// for CPU tensors over the fake runtime); LibTorch's pooled handle otherwise.
absl::StatusOr<cublasHandle_t> ThreadCublasHandle();

// GPU versions (device a/b/c, host offsets). Enqueued on `stream`: the
// handle is bound to it with cublasSetStream only when cublasGetStream says
// it is bound elsewhere (cublasSetStream resets the handle's workspace to
// cuBLAS' own pool, which would undo the workspace LibTorch gives its pooled
// handles). kGroupedBatched returns Unimplemented when this cuBLAS does not
// support it (see GroupedGemmFallbackVariant). `dtype` is kFloat32 or
// kBFloat16 (else InvalidArgument naming it); `math` applies to kFloat32.
absl::Status GroupedGemm(cublasHandle_t handle, const void* a, const void* b,
                         void* c, DType dtype, const int64_t* expert_offsets,
                         int num_experts, int64_t k, int64_t n, bool trans_b,
                         GroupedGemmVariant variant, void* workspace,
                         cudaStream_t stream,
                         GroupedGemmMath math = GroupedGemmMath::kStrictF32);
absl::Status GroupedGemmWeightGrad(
    cublasHandle_t handle, const void* a, const void* dc, void* db, DType dtype,
    const int64_t* expert_offsets, int num_experts, int64_t k, int64_t n,
    GroupedGemmVariant variant, void* workspace, cudaStream_t stream,
    GroupedGemmMath math = GroupedGemmMath::kStrictF32);
#endif  // SMOE_WITH_CUDA

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_H_
