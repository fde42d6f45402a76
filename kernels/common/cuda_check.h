// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/cuda_check.h
//
// Error propagation inside `.cu` launchers, which return cudaError_t and
// include neither absl nor torch. The host `.cc` wrappers turn the result into
// an absl::Status with CudaStatus() (kernels/common/cuda_status.h).
//
// REQUIRES: included only from CUDA translation units or files compiled with
// the CUDA runtime headers on the include path.
#ifndef SMOE_KERNELS_COMMON_CUDA_CHECK_H_
#define SMOE_KERNELS_COMMON_CUDA_CHECK_H_

#include <cuda_runtime_api.h>

// Evaluates `expr` (a cudaError_t); returns it from the enclosing function
// when it is not cudaSuccess.
#define SMOE_CUDA_RETURN_IF_ERROR(expr)                 \
  do {                                                  \
    const cudaError_t smoe_cuda_err_internal_ = (expr); \
    if (smoe_cuda_err_internal_ != cudaSuccess) {       \
      return smoe_cuda_err_internal_;                   \
    }                                                   \
  } while (false)

// Returns the launch error of the kernel launched just before, if any. Use
// right after `Kernel<<<...>>>(...)`; it does not synchronise.
#define SMOE_CUDA_RETURN_LAUNCH_ERROR() \
  SMOE_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError())

#endif  // SMOE_KERNELS_COMMON_CUDA_CHECK_H_
