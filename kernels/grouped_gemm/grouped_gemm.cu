// Copyright 2026 SMoE Lab authors.
//
// File: kernels/grouped_gemm/grouped_gemm.cu
//
// Row-major problems mapped onto column-major cuBLAS: a row-major X [r, c]
// is the column-major X^T with leading dimension c, so C = A . B becomes
// C^T = B^T . A^T, i.e. cuBLAS (m, n, k) = (n, rows_e, k) with B first.
//   forward:           op(B) = N (ld n), op(A) = N (ld k), C ld n
//   forward, trans_b:  op(B) = T (ld k), op(A) = N (ld k), C ld n
//   weight grad:       dB^T = dC^T . A: (m, n, k) = (n, k, rows_e),
//                      op(dC) = N (ld n), op(A) = T (ld k), dB ld n
//
// cublasGemmGroupedBatchedEx exists from cuBLAS 12.5 (CUBLAS_VERSION 120500,
// kCublasGroupedBatchedMinVersion in grouped_gemm.h); against an older cuBLAS
// the grouped variant compiles to a CUBLAS_STATUS_NOT_SUPPORTED return, which
// the host wrapper turns into Unimplemented (callers fall back to the loop).
//
// Napkin math (grouped_gemm_bench.cu): FLOPs = 2 * rows * k * n; at
// 1,024 tokens per expert, E=8, k=n=4096 that is 275 GFLOP -> 0.28 ms at the
// 989 TFLOP/s bf16 peak. Goal: >= 60 % of the measured dense bf16 rate.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/common/cuda_launch.cuh"
#include "kernels/grouped_gemm/grouped_gemm_launch.h"

namespace smoe::kernels {
namespace {

constexpr bool kHasGroupedBatched = CUBLAS_VERSION >= 120500;

struct Problem {
  cublasOperation_t op_first, op_second;
  int m, n, k;
  const void* first;  // cuBLAS "A"
  int ld_first;
  const void* second;  // cuBLAS "B"
  int ld_second;
  void* out;
  int ld_out;
};

// Pointers per StorePointersKernel launch: 480 x 8 B = 3,840 B of argument,
// inside the 4 KiB kernel-parameter limit every architecture supports.
constexpr int kPointersPerLaunch = 480;
struct PointerBatch {
  const void* p[kPointersPerLaunch];
};

__global__ void StorePointersKernel(PointerBatch batch, int count,
                                    const void** dst) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) dst[i] = batch.p[i];
}

}  // namespace

GemmLaunchResult LaunchGroupedGemm(cublasHandle_t handle, const void* a,
                                   const void* b, void* c, int dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   int mode, int variant, int math,
                                   void* workspace, cudaStream_t stream) {
  GemmLaunchResult r;
  if (variant == 0 && !kHasGroupedBatched) {
    r.cublas = CUBLAS_STATUS_NOT_SUPPORTED;
    return r;
  }
  // NOTE: cublasSetStream also resets the handle's workspace to cuBLAS' own
  // pool; LibTorch's pooled handle already runs on the current stream with a
  // workspace from its caching allocator, so bind only when it differs.
  cudaStream_t bound = nullptr;
  r.cublas = cublasGetStream(handle, &bound);
  if (r.cublas != CUBLAS_STATUS_SUCCESS) return r;
  if (bound != stream) {
    r.cublas = cublasSetStream(handle, stream);
    if (r.cublas != CUBLAS_STATUS_SUCCESS) return r;
  }
  const size_t elem = dtype == 0 ? 4 : 2;
  const cudaDataType_t type = dtype == 0 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t compute = dtype == 0 && math == 1
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  char* pc = static_cast<char*>(c);
  std::vector<Problem> probs;
  for (int e = 0; e < num_experts; ++e) {
    const int64_t row0 = expert_offsets[e];
    const int rows = static_cast<int>(expert_offsets[e + 1] - row0);
    const char* be = pb + static_cast<size_t>(e) * k * n * elem;
    if (mode == 2) {
      char* dbe = pc + static_cast<size_t>(e) * k * n * elem;
      if (rows == 0) {
        // NOTE: dB_e of an expert without tokens is zero, not untouched.
        r.cuda = cudaMemsetAsync(dbe, 0, k * n * elem, stream);
        if (r.cuda != cudaSuccess) return r;
        continue;
      }
      // a = A (rows x k), b = dC (rows x n), c = dB.
      probs.push_back(
          {CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(n), static_cast<int>(k),
           rows, pb + static_cast<size_t>(row0) * n * elem, static_cast<int>(n),
           pa + static_cast<size_t>(row0) * k * elem, static_cast<int>(k), dbe,
           static_cast<int>(n)});
      continue;
    }
    if (rows == 0) continue;
    const bool tb = mode == 1;
    probs.push_back(
        {tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), rows,
         static_cast<int>(k), be, static_cast<int>(tb ? k : n),
         pa + static_cast<size_t>(row0) * k * elem, static_cast<int>(k),
         pc + static_cast<size_t>(row0) * n * elem, static_cast<int>(n)});
  }
  if (probs.empty()) return r;
  const float alpha = 1.0f, beta = 0.0f;
  if (variant == 1) {
    for (const Problem& p : probs) {
      r.cublas = cublasGemmEx(handle, p.op_first, p.op_second, p.m, p.n, p.k,
                              &alpha, p.first, type, p.ld_first, p.second, type,
                              p.ld_second, &beta, p.out, type, p.ld_out,
                              compute, CUBLAS_GEMM_DEFAULT);
      if (r.cublas != CUBLAS_STATUS_SUCCESS) return r;
    }
    return r;
  }
#if CUBLAS_VERSION >= 120500
  // Grouped: one group of size 1 per problem; pointer arrays on the device.
  const int g = static_cast<int>(probs.size());
  std::vector<cublasOperation_t> ta(g), tb(g);
  std::vector<int> m(g), nn(g), kk(g), lda(g), ldb(g), ldc(g), size(g, 1);
  std::vector<float> alphas(g, alpha), betas(g, beta);
  std::vector<const void*> ptrs(3 * g);
  for (int i = 0; i < g; ++i) {
    const Problem& p = probs[i];
    ta[i] = p.op_first;
    tb[i] = p.op_second;
    m[i] = p.m;
    nn[i] = p.n;
    kk[i] = p.k;
    lda[i] = p.ld_first;
    ldb[i] = p.ld_second;
    ldc[i] = p.ld_out;
    ptrs[i] = p.first;
    ptrs[g + i] = p.second;
    ptrs[2 * g + i] = p.out;
  }
  // The pointer arrays reach the device as kernel ARGUMENTS (copied into the
  // launch itself), not by cudaMemcpyAsync from pageable memory, which makes
  // the driver synchronise with the stream first (review A9).
  const void** dev = static_cast<const void**>(workspace);
  for (int off = 0; off < 3 * g; off += kPointersPerLaunch) {
    const int count = std::min(kPointersPerLaunch, 3 * g - off);
    PointerBatch batch;
    std::copy(ptrs.begin() + off, ptrs.begin() + off + count, batch.p);
    SMOE_LAUNCH(StorePointersKernel, 1, 128, 0, stream, batch, count,
                dev + off);
    r.cuda = cudaPeekAtLastError();
    if (r.cuda != cudaSuccess) return r;
  }
  r.cublas = cublasGemmGroupedBatchedEx(
      handle, ta.data(), tb.data(), m.data(), nn.data(), kk.data(),
      alphas.data(), dev, type, lda.data(), dev + g, type, ldb.data(),
      betas.data(), const_cast<void* const*>(dev + 2 * g), type, ldc.data(), g,
      size.data(), compute);
#else
  (void)workspace;
  r.cublas = CUBLAS_STATUS_NOT_SUPPORTED;  // unreachable: returned above
#endif
  return r;
}

}  // namespace smoe::kernels
