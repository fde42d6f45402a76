// Copyright 2026 SMoE Lab authors.
//
// File: kernels/grouped_gemm/grouped_gemm_bench.cu
//
// Grouped expert GEMM benchmark (forward, bf16 in/out, f32 accumulate), both
// variants, against the measured dense bf16 cuBLAS rate of this device.
// Napkin math: FLOPs = 2 * T * k * d * h summed over experts; with E=8, k=2,
// T=16k, d=h=4096: 1.1 TFLOP -> 1.1 ms at the 989 TFLOP/s peak. Rows per
// expert M_e = T*k/E; below ~300 the GEMM is bound by reading the E*d*h
// weights. Target (kernels/README.md): grouped >= 60 % of dense bf16 at
// M_e >= 1,024 with balanced routing; skewed routing reported beside it.
#include <cstdio>
#include <vector>

#include "kernels/common/bench.h"
#include "kernels/grouped_gemm/grouped_gemm.h"

int main() {
  using namespace smoe::kernels;
  cudaStream_t stream;
  SMOE_BENCH_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  SMOE_BENCH_CUBLAS(cublasCreate(&handle));
  const double dense = bench::MeasureDenseBf16Tflops(handle, stream);
  std::printf("# dense bf16 cublasGemmEx 8192^3: %.0f TFLOP/s\n", dense);
  std::printf("%6s %5s %2s %8s %8s %10s %8s %6s %10s %8s %6s\n", "T", "d", "k",
              "routing", "M_e", "grouped_us", "TFLOP/s", "%dense", "loop_us",
              "TFLOP/s", "%dense");
  const int e = 8;
  void* ws;
  SMOE_BENCH_CUDA(cudaMalloc(&ws, GroupedGemmWorkspaceBytes(e)));
  for (int t : {4096, 16384, 65536}) {
    for (int d : {128, 1024, 4096}) {
      for (int k : {1, 2, 4, 8}) {
        for (int skewed = 0; skewed < 2; ++skewed) {
          const int64_t rows = static_cast<int64_t>(t) * k;
          const int64_t h = d;  // expert hidden = model dim in this grid
          if (rows * (d + h) * 2 > (int64_t{8} << 30)) continue;
          std::vector<int64_t> off(e + 1, 0);
          for (int x = 0; x < e; ++x) {
            // skewed: expert 0 gets half of all rows, the rest share.
            const int64_t m = skewed ? (x == 0 ? rows / 2 : 0) : rows / e;
            off[x + 1] = off[x] + m;
          }
          if (skewed) {
            for (int x = 1; x < e; ++x)
              off[x] = rows / 2 + (x - 1) * (rows / 2) / (e - 1);
          }
          off[e] = rows;
          void *a, *b, *c;
          SMOE_BENCH_CUDA(cudaMalloc(&a, 2 * rows * d));
          SMOE_BENCH_CUDA(cudaMalloc(&b, 2 * static_cast<int64_t>(e) * d * h));
          SMOE_BENCH_CUDA(cudaMalloc(&c, 2 * rows * h));
          // Random inputs, like the dense ceiling (zeros clock higher).
          bench::FillUniformBf16(a, rows * d, 1);
          bench::FillUniformBf16(b, static_cast<size_t>(e) * d * h, 2);
          double us[2];
          for (int v = 0; v < 2; ++v) {
            us[v] = bench::TimeMedianUs(
                [&](cudaStream_t s) {
                  SMOE_BENCH_OK(GroupedGemm(
                      handle, a, b, c, DType::kBFloat16, off.data(), e, d, h,
                      false, static_cast<GroupedGemmVariant>(v), ws, s));
                },
                stream);
          }
          const double flops = 2.0 * rows * d * h;
          std::printf(
              "%6d %5d %2d %8s %8lld %10.1f %8.1f %5.0f%% %10.1f %8.1f "
              "%5.0f%%\n",
              t, d, k, skewed ? "skewed" : "balanced",
              static_cast<long long>(rows / e), us[0], flops / (us[0] * 1e6),
              100 * flops / (us[0] * 1e6) / dense, us[1], flops / (us[1] * 1e6),
              100 * flops / (us[1] * 1e6) / dense);
          cudaFree(a);
          cudaFree(b);
          cudaFree(c);
        }
      }
    }
  }
  cudaFree(ws);
  cublasDestroy(handle);
  return 0;
}
