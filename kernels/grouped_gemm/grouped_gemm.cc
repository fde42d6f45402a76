// Copyright 2026 SMoE Lab authors.
//
// Host wrappers of the grouped GEMM: validate, call cuBLAS, convert errors.
#include "kernels/grouped_gemm/grouped_gemm.h"

#include <cublas_v2.h>

#include "common/status_macros.h"
#include "kernels/common/cuda_status.h"
#include "kernels/grouped_gemm/grouped_gemm_launch.h"

namespace smoe::kernels {
namespace {

absl::Status ToStatus(const GemmLaunchResult& r, const char* what) {
  SMOE_RETURN_IF_ERROR(CudaStatus(r.cuda, what));
  return CublasStatus(r.cublas, what);
}

}  // namespace

size_t GroupedGemmWorkspaceBytes(int num_experts) {
  return sizeof(void*) * 3 * static_cast<size_t>(num_experts);
}

absl::StatusOr<cublasHandle_t> ThreadCublasHandle() {
  struct Handle {
    cublasHandle_t h = nullptr;
    absl::Status status;
    Handle() { status = CublasStatus(cublasCreate(&h), "cublasCreate"); }
    ~Handle() {
      if (h != nullptr) cublasDestroy(h);
    }
  };
  thread_local Handle handle;
  if (!handle.status.ok()) return handle.status;
  return handle.h;
}

absl::Status GroupedGemm(cublasHandle_t handle, const void* a, const void* b,
                         void* c, DType dtype, const int64_t* expert_offsets,
                         int num_experts, int64_t k, int64_t n, bool trans_b,
                         GroupedGemmVariant variant, void* workspace,
                         cudaStream_t stream, GroupedGemmMath math) {
  SMOE_RETURN_IF_ERROR(
      ValidateGroupedGemmArgs(expert_offsets, num_experts, k, n));
  SMOE_RETURN_IF_ERROR(CheckKernelFloatDType(dtype));
  return ToStatus(LaunchGroupedGemm(handle, a, b, c, static_cast<int>(dtype),
                                    expert_offsets, num_experts, k, n,
                                    trans_b ? 1 : 0, static_cast<int>(variant),
                                    static_cast<int>(math), workspace, stream),
                  "GroupedGemm");
}

absl::Status GroupedGemmWeightGrad(cublasHandle_t handle, const void* a,
                                   const void* dc, void* db, DType dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   GroupedGemmVariant variant, void* workspace,
                                   cudaStream_t stream, GroupedGemmMath math) {
  SMOE_RETURN_IF_ERROR(
      ValidateGroupedGemmArgs(expert_offsets, num_experts, k, n));
  SMOE_RETURN_IF_ERROR(CheckKernelFloatDType(dtype));
  return ToStatus(LaunchGroupedGemm(handle, a, dc, db, static_cast<int>(dtype),
                                    expert_offsets, num_experts, k, n,
                                    /*mode=*/2, static_cast<int>(variant),
                                    static_cast<int>(math), workspace, stream),
                  "GroupedGemmWeightGrad");
}

}  // namespace smoe::kernels
