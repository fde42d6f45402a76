// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/cuda_launch.cuh
//
// Launch and indexing helpers shared by the kernel files (permute.cu,
// router_topk.cu): the warp width, grid sizing, the indices of the
// warp-per-row grid-stride loop, butterfly warp reductions and the one-block
// segmented exclusive scan. The cudaError_t propagation macros are in
// cuda_check.h. No absl, no torch (docs/kernels.md 1).
//
// REQUIRES: included only from `.cu` translation units (nvcc).
// Thread-safety: stateless.
#ifndef SMOE_KERNELS_COMMON_CUDA_LAUNCH_CUH_
#define SMOE_KERNELS_COMMON_CUDA_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <cstdint>

// A kernel name with a comma (a template-id) is wrapped in SMOE_KERNEL(...).
#define SMOE_KERNEL(...) __VA_ARGS__
#if defined(SMOE_CUDA_EMU)
#include "kernels/emu/cuda_emu.h"
#define SMOE_LAUNCH(kernel, grid, block, smem, stream, ...)                    \
  ::smoe::emu::internal::MakeLauncher(#kernel, __PRETTY_FUNCTION__,            \
                                      {__FILE__, __LINE__}, grid, block, smem, \
                                      stream, &kernel)(__VA_ARGS__)
#define SMOE_SHARED(type, name, dims) SMOE_EMU_SHARED(type, name, dims)
#define SMOE_DYNAMIC_SHARED(type, name) SMOE_EMU_DYNAMIC_SHARED(type, name)
#else
#define SMOE_LAUNCH(kernel, grid, block, smem, stream, ...) \
  kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
#define SMOE_SHARED(type, name, dims) __shared__ type name dims
#define SMOE_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

namespace smoe::kernels {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullWarpMask = 0xffffffffu;

// Returns the number of blocks that covers `items` work items at `per_block`
// items per block, clamped to [1, max_blocks] (a grid-stride loop in the
// kernel covers what the clamp leaves out).
// REQUIRES: items >= 0, per_block >= 1, max_blocks >= 1.
inline int GridFor(int64_t items, int per_block, int64_t max_blocks) {
  const int64_t blocks = (items + per_block - 1) / per_block;
  return static_cast<int>(
      blocks < 1 ? 1 : (blocks > max_blocks ? max_blocks : blocks));
}

// This thread's lane in its warp.
__device__ __forceinline__ int LaneId() { return threadIdx.x % kWarpSize; }

// Warp-per-row grid-stride loop: warp GlobalWarpId() of the grid handles rows
// GlobalWarpId(), GlobalWarpId() + GridWarps(), ... (1-D grid and block;
// blockDim.x a multiple of kWarpSize).
__device__ __forceinline__ int64_t GlobalWarpId() {
  return static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) +
         threadIdx.x / kWarpSize;
}
__device__ __forceinline__ int64_t GridWarps() {
  return static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
}

// Returns the sum (max) of `v` over the 32 lanes, to every lane (xor
// butterfly). REQUIRES: all 32 lanes call it.
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    v += __shfl_xor_sync(kFullWarpMask, v, o);
  }
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    v = fmaxf(v, __shfl_xor_sync(kFullWarpMask, v, o));
  }
  return v;
}

// Writes out[i] = in[0] + ... + in[i - 1] for i in [0, n) with one block of
// kThreads threads: thread t sums a contiguous segment, a Hillis-Steele scan
// of the kThreads segment totals in shared memory gives each segment its
// base, then thread t writes its segment. `in` and `out` may be the same
// array (in-place). Returns the total sum(in[0..n)) to every thread.
// REQUIRES: blockDim.x == kThreads; every thread of the block calls it
// (__syncthreads inside), at most once per kernel (the returned total is read
// from shared memory after the last barrier); n >= 0.
template <int kThreads, typename Index>
__device__ int32_t BlockExclusiveScan(const int32_t* in, int32_t* out,
                                      Index n) {
  SMOE_SHARED(int32_t, s_tot, [kThreads]);
  const Index seg = (n + kThreads - 1) / kThreads;
  const Index begin = min(n, static_cast<Index>(threadIdx.x) * seg);
  const Index end = min(n, begin + seg);
  int32_t local = 0;
  for (Index i = begin; i < end; ++i) local += in[i];
  s_tot[threadIdx.x] = local;
  __syncthreads();
  for (int o = 1; o < kThreads; o *= 2) {
    const int32_t add =
        threadIdx.x >= static_cast<unsigned>(o) ? s_tot[threadIdx.x - o] : 0;
    __syncthreads();
    s_tot[threadIdx.x] += add;
    __syncthreads();
  }
  int32_t run = s_tot[threadIdx.x] - local;  // exclusive prefix of segment
  for (Index i = begin; i < end; ++i) {
    const int32_t c = in[i];  // NOTE: read before the write when in == out.
    out[i] = run;
    run += c;
  }
  return s_tot[kThreads - 1];
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_CUDA_LAUNCH_CUH_
