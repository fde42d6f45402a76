// Copyright 2026 SMoE Lab authors.
#include "kernels/common/cuda_status.h"

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace smoe::kernels {

absl::Status CudaStatus(cudaError_t err, absl::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // NOTE: clears non-sticky errors only.
  const std::string msg = absl::StrCat(what, ": ", cudaGetErrorName(err), ": ",
                                       cudaGetErrorString(err));
  switch (err) {
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
      return absl::InvalidArgumentError(msg);
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status CublasStatus(cublasStatus_t st, absl::string_view what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string msg = absl::StrCat(what, ": ", cublasGetStatusName(st),
                                       ": ", cublasGetStatusString(st));
  switch (st) {
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(msg);
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return absl::UnimplementedError(msg);
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status CheckKernelFloatDType(DType dtype) {
  if (IsKernelFloatDType(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype=", DTypeName(dtype), ": must be float32 or bfloat16"));
}

}  // namespace smoe::kernels
