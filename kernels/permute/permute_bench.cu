// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/permute_bench.cu
//
// Permute / combine benchmark. Napkin math (b = bytes per element):
//   plan:     reads T*k*4 twice, writes T*k*8 + small       (not in the table
//             as bandwidth; it is latency-bound, reported in us)
//   permute:  reads T*d*b (each token row once per choice: T*k*d*b counted),
//             writes T*k*d*b, plus 4 B of index per row
//   combine:  reads T*k*d*b + T*k*8, writes T*d*b
// At T=16k, d=4096, k=2, bf16, permute moves 0.27 GB -> ~80 us at
// 3.35 TB/s. Target (kernels/README.md): >= 80 % of the measured D2D copy
// bandwidth. Routing: "balanced" (token t picks experts (t + j) % E) and
// "skewed" (choice 0 goes to expert 0 for 3/4 of tokens).
#include <cuda_bf16.h>

#include <cstdio>
#include <vector>

#include "kernels/common/bench.h"
#include "kernels/permute/permute.h"

int main() {
  using namespace smoe::kernels;
  cudaStream_t stream;
  SMOE_BENCH_CUDA(cudaStreamCreate(&stream));
  const double copy_gbps = bench::PrintCopyGBps(stream);
  std::printf("%6s %5s %2s %8s %9s %9s %8s %6s %9s %8s %6s\n", "T", "d", "k",
              "routing", "plan_us", "perm_us", "GB/s", "%copy", "comb_us",
              "GB/s", "%copy");
  const int e = 8;
  for (int t : {4096, 16384, 65536}) {
    for (int d : {128, 1024, 4096}) {
      for (int k : {1, 2, 4, 8}) {
        for (int skewed = 0; skewed < 2; ++skewed) {
          const size_t rows = static_cast<size_t>(t) * k;
          if (rows * d * 2 > (size_t{6} << 30)) continue;  // stay < 6 GB
          std::vector<int32_t> topk(rows);
          for (int r = 0; r < t; ++r) {
            for (int j = 0; j < k; ++j) {
              int x = (r + j) % e;
              if (skewed && r % 4 != 0)
                x = (j == 0) ? 0 : (r + j) % (e - 1) + 1;
              topk[static_cast<size_t>(r) * k + j] = x;
            }
          }
          int32_t *d_topk, *sorted, *dest, *off, *cnt;
          void *ws, *x, *perm, *out;
          float* w;
          SMOE_BENCH_CUDA(cudaMalloc(&d_topk, 4 * rows));
          SMOE_BENCH_CUDA(cudaMalloc(&sorted, 4 * rows));
          SMOE_BENCH_CUDA(cudaMalloc(&dest, 4 * rows));
          SMOE_BENCH_CUDA(cudaMalloc(&off, 4 * (e + 1)));
          SMOE_BENCH_CUDA(cudaMalloc(&cnt, 4 * e));
          SMOE_BENCH_CUDA(cudaMalloc(&ws, PermutePlanWorkspaceBytes(t, k, e)));
          SMOE_BENCH_CUDA(cudaMalloc(&x, 2 * static_cast<size_t>(t) * d));
          SMOE_BENCH_CUDA(cudaMalloc(&perm, 2 * rows * d));
          SMOE_BENCH_CUDA(cudaMalloc(&out, 2 * static_cast<size_t>(t) * d));
          SMOE_BENCH_CUDA(cudaMalloc(&w, 4 * rows));
          SMOE_BENCH_CUDA(cudaMemcpy(d_topk, topk.data(), 4 * rows,
                                     cudaMemcpyHostToDevice));
          SMOE_BENCH_CUDA(cudaMemset(x, 0, 2 * static_cast<size_t>(t) * d));
          bench::FillUniform(w, rows, t + k);
          const PermutePlan plan{sorted, dest, off, t, k, e};
          const double plan_us = bench::TimeMedianUs(
              [&](cudaStream_t s) {
                SMOE_BENCH_OK(BuildPermutePlan(d_topk, plan, cnt, ws, s));
              },
              stream);
          const double perm_us = bench::TimeMedianUs(
              [&](cudaStream_t s) {
                SMOE_BENCH_OK(Permute(x, DType::kBFloat16, d, plan, perm, s));
              },
              stream);
          const double comb_us = bench::TimeMedianUs(
              [&](cudaStream_t s) {
                SMOE_BENCH_OK(
                    Combine(perm, w, DType::kBFloat16, d, plan, out, s));
              },
              stream);
          const double perm_bytes = 2.0 * 2 * rows * d + 4.0 * rows;
          const double comb_bytes = 2.0 * rows * d + 8.0 * rows + 2.0 * t * d;
          const double pg = perm_bytes / (perm_us * 1e3);
          const double cg = comb_bytes / (comb_us * 1e3);
          std::printf(
              "%6d %5d %2d %8s %9.2f %9.2f %8.0f %5.0f%% %9.2f %8.0f %5.0f%%\n",
              t, d, k, skewed ? "skewed" : "balanced", plan_us, perm_us, pg,
              100 * pg / copy_gbps, comb_us, cg, 100 * cg / copy_gbps);
          for (void* p : {static_cast<void*>(d_topk),
                          static_cast<void*>(sorted), static_cast<void*>(dest),
                          static_cast<void*>(off), static_cast<void*>(cnt), ws,
                          x, perm, out, static_cast<void*>(w)}) {
            cudaFree(p);
          }
        }
      }
    }
  }
  return 0;
}
