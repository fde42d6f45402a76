// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/cublas_api.h
//
// TEST-ONLY FAKE of the cuBLAS subset that kernels/common/cuda_status.cc,
// kernels/grouped_gemm/grouped_gemm.h and kernels/selfcheck/selfcheck.cc use,
// with the names and enum values of CUDA 13's cublas_api.h /
// library_types.h, so those sources compile unchanged against
// tests/fakes/include. A handle remembers its stream; cublasGemmEx is a
// stream operation of the fake runtime that computes the product on the host
// (tests/fakes/fake_kernels.cc). Declared in namespace smoe_fake like the
// runtime (cuda_runtime_api.h), so a binary may also link the real cuBLAS.
#ifndef SMOE_TESTS_FAKES_INCLUDE_CUBLAS_API_H_
#define SMOE_TESTS_FAKES_INCLUDE_CUBLAS_API_H_

#include "cuda_runtime_api.h"

#define SMOE_FAKE_CUBLAS 1
#define CUBLAS_VERSION 130000

namespace smoe_fake {

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16
};

enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };

// library_types.h
enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14
};
enum libraryPropertyType_t { MAJOR_VERSION = 0, MINOR_VERSION, PATCH_LEVEL };
typedef enum libraryPropertyType_t libraryPropertyType;

enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77
};
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

struct cublasContext;
typedef struct cublasContext* cublasHandle_t;

const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);
cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value);

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream);

// Column-major C = alpha op(A) op(B) + beta C for CUDA_R_32F and CUDA_R_16BF
// operands (the same type for A, B and C), float accumulation.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void* alpha, const void* A,
                            cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta,
                            void* C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);

// cuBLAS 12.5's grouped GEMM: group g holds group_size[g] problems of its
// sizes and scalars (host arrays, read at the call); Aarray, Barray and
// Carray are DEVICE arrays of one pointer per problem, read when the
// operation runs on the handle's stream (after the kernels before it).
cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[],
    const int n_array[], const int k_array[], const void* alpha_array,
    const void* const Aarray[], cudaDataType_t Atype, const int lda_array[],
    const void* const Barray[], cudaDataType_t Btype, const int ldb_array[],
    const void* beta_array, void* const Carray[], cudaDataType_t Ctype,
    const int ldc_array[], int group_count, const int group_size[],
    cublasComputeType_t computeType);

}  // namespace smoe_fake

#endif  // SMOE_TESTS_FAKES_INCLUDE_CUBLAS_API_H_
