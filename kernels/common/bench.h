// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/bench.h
//
// Shared machinery of the `*_bench.cu` binaries (docs/kernels.md 4): CUDA-event
// timing with warmups and an L2 flush between repetitions
// (kernels/common/device_timing.h, shared with `smoe doctor`), and the two
// ceilings every kernel is reported against, measured on the same device in
// the same run:
//   * copy bandwidth: cudaMemcpy device-to-device of 1 GiB, counted as
//     read + write bytes (2 x size), i.e. the achievable HBM rate;
//   * dense bf16 GEMM rate: cublasGemmEx 8192^3, bf16 in/out, fp32 compute,
//     on uniform random inputs (all-zero inputs draw less power, so an H100
//     holds higher clocks on them and the ceiling would be inflated).
// Header-only (host code and one fill kernel); include only from `.cu`
// benchmark files.
#ifndef SMOE_KERNELS_COMMON_BENCH_H_
#define SMOE_KERNELS_COMMON_BENCH_H_

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/common/cuda_launch.cuh"
#include "kernels/common/device_timing.h"

namespace smoe::kernels::bench {

// Aborts the benchmark with file:line on a CUDA error (benchmarks are
// binaries, not library code; there is no caller to return a status to).
#define SMOE_BENCH_CUDA(expr)                                            \
  do {                                                                   \
    const cudaError_t e_ = (expr);                                       \
    if (e_ != cudaSuccess) {                                             \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(e_));                              \
      std::exit(1);                                                      \
    }                                                                    \
  } while (false)

// Same for an absl::Status returned by a kernel's host wrapper.
#define SMOE_BENCH_OK(expr)                                              \
  do {                                                                   \
    const absl::Status st_ = (expr);                                     \
    if (!st_.ok()) {                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   st_.ToString().c_str());                              \
      std::exit(1);                                                      \
    }                                                                    \
  } while (false)

#define SMOE_BENCH_CUBLAS(expr)                                          \
  do {                                                                   \
    const cublasStatus_t s_ = (expr);                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cublasGetStatusString(s_));                           \
      std::exit(1);                                                      \
    }                                                                    \
  } while (false)

// Owns a 256 MiB buffer (5x the H100's 50 MB L2) that the timing overwrites
// before each repetition, so that the timed launch starts with a cold L2.
class L2Flusher {
 public:
  static constexpr size_t kBytes = size_t{256} << 20;
  L2Flusher() { SMOE_BENCH_CUDA(cudaMalloc(&buf_, kBytes)); }
  ~L2Flusher() { cudaFree(buf_); }
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void* buffer() const { return buf_; }

 private:
  void* buf_ = nullptr;
};

// kernels/common/device_timing.h's TimeDeviceMedianUs with the shared
// flusher: `fn` `warmup` times, then `reps` times with an L2 flush before
// each, timed with CUDA events. Returns the median in microseconds.
inline double TimeMedianUs(const std::function<void(cudaStream_t)>& fn,
                           cudaStream_t stream, int warmup = 3, int reps = 20) {
  static L2Flusher* flusher = new L2Flusher();
  const absl::StatusOr<double> us = TimeDeviceMedianUs(
      [&](cudaStream_t s) {
        fn(s);
        return absl::OkStatus();
      },
      stream, flusher->buffer(), L2Flusher::kBytes, warmup, reps);
  SMOE_BENCH_OK(us.status());
  SMOE_BENCH_CUDA(cudaGetLastError());
  return *us;
}

// Returns the measured device-to-device copy rate in GB/s (1e9 B/s), counting
// read + write bytes of a 1 GiB cudaMemcpyAsync.
inline double MeasureCopyGBps(cudaStream_t stream) {
  const size_t bytes = size_t{1} << 30;
  void* a = nullptr;
  void* b = nullptr;
  SMOE_BENCH_CUDA(cudaMalloc(&a, bytes));
  SMOE_BENCH_CUDA(cudaMalloc(&b, bytes));
  SMOE_BENCH_CUDA(cudaMemsetAsync(a, 1, bytes, stream));
  const double us = TimeMedianUs(
      [&](cudaStream_t s) {
        SMOE_BENCH_CUDA(
            cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
      },
      stream, 2, 10);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (us * 1e3);
}

// Measures MeasureCopyGBps(stream), prints it as the table's
// "# device copy bandwidth (D2D, read+write): <n> GB/s" header line and
// returns it.
inline double PrintCopyGBps(cudaStream_t stream) {
  const double gbps = MeasureCopyGBps(stream);
  std::printf("# device copy bandwidth (D2D, read+write): %.0f GB/s\n", gbps);
  return gbps;
}

// Device-side fill behind FillUniformBf16: element i gets a uniform value in
// [lo, hi) from a splitmix64 hash of (seed, i). A template so that every
// benchmark file can include this header.
template <typename T>
__global__ void FillUniformKernel(T* p, size_t n, unsigned long long seed,
                                  float lo, float hi) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = T(lo + (hi - lo) * static_cast<float>(z >> 40) / 16777216.0f);
  }
}

// Fills `n` bf16 values at device pointer `p` with uniform values in
// [lo, hi) (seeded, generated on the device: the benches fill GiBs), then
// waits for the fill.
inline void FillUniformBf16(void* p, size_t n, unsigned seed, float lo = -1.0f,
                            float hi = 1.0f) {
  SMOE_LAUNCH(FillUniformKernel<__nv_bfloat16>, 1024, 256, 0, 0,
              static_cast<__nv_bfloat16*>(p), n, seed, lo, hi);
  SMOE_BENCH_CUDA(cudaGetLastError());
  SMOE_BENCH_CUDA(cudaDeviceSynchronize());
}

// Returns the measured dense bf16 GEMM rate (TFLOP/s) of cublasGemmEx at
// m = n = k = `size`, bf16 inputs and output, fp32 accumulation, on uniform
// random inputs in [-1, 1).
inline double MeasureDenseBf16Tflops(cublasHandle_t handle, cudaStream_t stream,
                                     int size = 8192) {
  const size_t elems = static_cast<size_t>(size) * size;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  SMOE_BENCH_CUDA(cudaMalloc(&a, 2 * elems));
  SMOE_BENCH_CUDA(cudaMalloc(&b, 2 * elems));
  SMOE_BENCH_CUDA(cudaMalloc(&c, 2 * elems));
  FillUniformBf16(a, elems, 1);
  FillUniformBf16(b, elems, 2);
  SMOE_BENCH_CUBLAS(cublasSetStream(handle, stream));
  const float alpha = 1.0f, beta = 0.0f;
  const double us = TimeMedianUs(
      [&](cudaStream_t) {
        SMOE_BENCH_CUBLAS(cublasGemmEx(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, a,
            CUDA_R_16BF, size, b, CUDA_R_16BF, size, &beta, c, CUDA_R_16BF,
            size, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      },
      stream, 3, 10);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * size * size * static_cast<double>(size) / (us * 1e6);
}

// Fills `n` floats at device pointer `p` with uniform values in [lo, hi)
// from a fixed host-side LCG (seeded), copied synchronously.
inline void FillUniform(float* p, size_t n, unsigned seed, float lo = -1.0f,
                        float hi = 1.0f) {
  std::vector<float> h(n);
  unsigned long long s = 0x9E3779B97F4A7C15ull ^ seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    h[i] = lo + (hi - lo) * static_cast<float>(s >> 40) / 16777216.0f;
  }
  SMOE_BENCH_CUDA(
      cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

}  // namespace smoe::kernels::bench

#endif  // SMOE_KERNELS_COMMON_BENCH_H_
