// Copyright 2026 SMoE Lab authors.
//
// File: kernels/router_topk/router_topk_bench.cu
//
// Router benchmark. Napkin math: the kernel must read T*E*4 bytes of f32
// logits and write T*k*(4+4) bytes of indices and weights, plus E*4*2 for
// counts/offsets. The memory floor is bytes / copy_bw (measured D2D rate of
// this device in this run). At T=16384, E=256: 16.8 MB -> ~5 us at 3.35 TB/s;
// at E=8 the 0.5 MB floor is below launch latency (~2 us), so small-E rows
// measure latency. Target (kernels/README.md): <= 2x the floor at T >= 16k.
// Prints: T, E, k, us, GB/s achieved, floor us, ratio us/floor.
#include <cstdio>

#include "kernels/common/bench.h"
#include "kernels/router_topk/router_topk.h"

int main() {
  using namespace smoe::kernels;
  cudaStream_t stream;
  SMOE_BENCH_CUDA(cudaStreamCreate(&stream));
  const double copy_gbps = bench::PrintCopyGBps(stream);
  std::printf("%8s %5s %3s %10s %10s %10s %8s\n", "T", "E", "k", "us", "GB/s",
              "floor_us", "x_floor");
  for (int t : {4096, 16384, 65536}) {
    for (int e : {8, 64, 256}) {
      for (int k : {1, 2, 4, 8}) {
        float* logits;
        float* w;
        int32_t *idx, *cnt, *off;
        SMOE_BENCH_CUDA(cudaMalloc(&logits, sizeof(float) * t * e));
        SMOE_BENCH_CUDA(cudaMalloc(&w, sizeof(float) * t * k));
        SMOE_BENCH_CUDA(cudaMalloc(&idx, sizeof(int32_t) * t * k));
        SMOE_BENCH_CUDA(cudaMalloc(&cnt, sizeof(int32_t) * e));
        SMOE_BENCH_CUDA(cudaMalloc(&off, sizeof(int32_t) * (e + 1)));
        bench::FillUniform(logits, static_cast<size_t>(t) * e, t + e + k);
        const double us = bench::TimeMedianUs(
            [&](cudaStream_t s) {
              SMOE_BENCH_OK(RouterTopK(logits, t, e, k,
                                       RouterGating::kRenormalized, idx, w, cnt,
                                       off, s));
            },
            stream);
        const double bytes = 4.0 * t * e + 8.0 * t * k + 8.0 * e;
        const double floor_us = bytes / (copy_gbps * 1e3);
        std::printf("%8d %5d %3d %10.2f %10.1f %10.2f %8.2f\n", t, e, k, us,
                    bytes / (us * 1e3), floor_us, us / floor_us);
        cudaFree(logits);
        cudaFree(w);
        cudaFree(idx);
        cudaFree(cnt);
        cudaFree(off);
      }
    }
  }
  return 0;
}
