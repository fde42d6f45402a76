// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/cuda_status.h
//
// Conversion of CUDA runtime and cuBLAS error codes into absl::Status for the
// host-side wrappers (`foo.cc`) of every kernel, and the dtype check they
// share. Compiled only with CUDA.
#ifndef SMOE_KERNELS_COMMON_CUDA_STATUS_H_
#define SMOE_KERNELS_COMMON_CUDA_STATUS_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/common/dtype.h"

namespace smoe::kernels {

// Returns OK for cudaSuccess. Otherwise returns a status whose message is
// "<what>: <cudaGetErrorName>: <cudaGetErrorString>". Code: InvalidArgument
// for cudaErrorInvalidValue / cudaErrorInvalidConfiguration,
// ResourceExhausted for cudaErrorMemoryAllocation, Internal otherwise. Clears
// a non-sticky error from the runtime's last-error slot.
absl::Status CudaStatus(cudaError_t err, absl::string_view what);

// Same for cuBLAS: "<what>: <cublasGetStatusName>: <cublasGetStatusString>".
// InvalidArgument for CUBLAS_STATUS_INVALID_VALUE, Unimplemented for
// CUBLAS_STATUS_NOT_SUPPORTED, ResourceExhausted for
// CUBLAS_STATUS_ALLOC_FAILED, Internal otherwise.
absl::Status CublasStatus(cublasStatus_t st, absl::string_view what);

// Returns OK when the dispatch kernels compute in `dtype` (kFloat32,
// kBFloat16: IsKernelFloatDType), else InvalidArgument
// "dtype=<DTypeName>: must be float32 or bfloat16". Called by the host
// wrappers before launching a kernel that is instantiated per element type.
absl::Status CheckKernelFloatDType(DType dtype);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_CUDA_STATUS_H_
