// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/emu_test_kernels.cu
//
// Tiny kernels for kernels/emu/emu_test.cc: each exercises one CUDA rule
// (shuffle source lanes and widths, votes, barriers, atomics, shared memory)
// or breaks one on purpose (a divergent barrier, a deadlock, a bad mask, a
// race, an uninitialised or out-of-bounds shared read). Built only for the
// emulator (SMOE_CUDA_EMU), but written as plain CUDA with the portable
// spellings, so nvcc would take it too.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_launch.cuh"
#include "kernels/emu/emu_test_kernels.h"

namespace smoe::emu::test {
namespace {

__global__ void ShuffleKernel(int* out, int op, int arg, int width,
                              unsigned mask) {
  const int lane = threadIdx.x % 32;
  if (!((mask >> lane) & 1u)) return;
  const int v = 100 + lane;
  int r = 0;
  switch (op) {
    case 0:
      r = __shfl_sync(mask, v, arg, width);
      break;
    case 1:
      r = __shfl_up_sync(mask, v, arg, width);
      break;
    case 2:
      r = __shfl_down_sync(mask, v, arg, width);
      break;
    default:
      r = __shfl_xor_sync(mask, v, arg, width);
  }
  out[threadIdx.x] = r;
}

__global__ void VoteKernel(unsigned* ballot, unsigned* match) {
  const int lane = threadIdx.x % 32;
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  match[threadIdx.x] = __match_any_sync(0xffffffffu, lane % 4);
}

// Sum of in[0..blockDim) per block through shared memory (a tree).
__global__ void BlockSumKernel(const int* in, int* out) {
  SMOE_SHARED(int, s, [256]);
  s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o /= 2) {
    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// Per-block histogram of in[] % bins in dynamic shared memory (atomics in
// shared and global memory: never a race).
__global__ void HistogramKernel(const int* in, int n, int bins, int* counts,
                                float* total) {
  SMOE_DYNAMIC_SHARED(int, h);
  for (int b = threadIdx.x; b < bins; b += blockDim.x) h[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    atomicAdd(&h[in[i] % bins], 1);
    atomicAdd(total, 1.0f);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    atomicAdd(&counts[b], h[b]);
  }
}

// Half of the threads exit; the barrier waits for the live ones only.
__global__ void ExitEarlyKernel(int* out) {
  SMOE_SHARED(int, s, [64]);
  if (threadIdx.x >= 32) return;
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[31 - threadIdx.x];
}

// Lane 0 writes shared memory; __syncwarp orders it before the other lanes'
// reads.
__global__ void SyncwarpOrdersKernel(int* out) {
  SMOE_SHARED(int, s, [1]);
  if (threadIdx.x == 0) s[0] = 7;
  __syncwarp();
  out[threadIdx.x] = s[0];
}

// ---- Broken on purpose ----

__global__ void DivergentBarrierKernel() {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

__global__ void DeadlockKernel(int* out) {
  // Warp 0 shuffles with the full mask; lane 5 goes to the barrier instead.
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x != 5) v = __shfl_xor_sync(0xffffffffu, v, 1);
  __syncthreads();
  out[threadIdx.x] = v;
}

__global__ void MaskMismatchKernel(int* out) {
  const unsigned mask = threadIdx.x < 8 ? 0xffffffffu : 0x0000ffffu;
  out[threadIdx.x] = __shfl_down_sync(mask, 1, 1);
}

__global__ void ShuffleOrdersNothingKernel(int* out) {
  if (threadIdx.x == 0) out[0] = 1;
  const int v = __shfl_sync(0xffffffffu, 1, 0);
  if (threadIdx.x == 1) out[1] = out[0] + v;
}

__global__ void SharedRaceKernel(int* out) {
  SMOE_SHARED(int, s, [1]);
  if (threadIdx.x == 0) s[0] = 0;
  __syncthreads();
  s[0] += 1;  // every thread, no atomic
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s[0];
}

__global__ void GlobalRaceKernel(int* out) {
  if (threadIdx.x == 0) out[0] = static_cast<int>(blockIdx.x);
}

__global__ void UninitSharedKernel(int* out) {
  SMOE_SHARED(int, s, [64]);
  if (threadIdx.x < 32) s[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];  // threads 32..63 read unwritten bytes
}

__global__ void SharedOutOfBoundsKernel(int* out) {
  SMOE_SHARED(int, s, [32]);
  s[threadIdx.x] = 1;  // 64 threads
  __syncthreads();
  out[threadIdx.x] = 0;
}

}  // namespace

void LaunchShuffle(int* out, int op, int arg, int width, unsigned mask) {
  SMOE_LAUNCH(ShuffleKernel, 1, 32, 0, 0, out, op, arg, width, mask);
}
void LaunchVote(unsigned* ballot, unsigned* match) {
  SMOE_LAUNCH(VoteKernel, 1, 32, 0, 0, ballot, match);
}
void LaunchBlockSum(const int* in, int* out, int blocks) {
  SMOE_LAUNCH(BlockSumKernel, blocks, 256, 0, 0, in, out);
}
void LaunchHistogram(const int* in, int n, int bins, int* counts, float* total,
                     int blocks) {
  SMOE_LAUNCH(HistogramKernel, blocks, 96, sizeof(int) * bins, 0, in, n, bins,
              counts, total);
}
void LaunchExitEarly(int* out) {
  SMOE_LAUNCH(ExitEarlyKernel, 1, 64, 0, 0, out);
}
void LaunchSyncwarpOrders(int* out) {
  SMOE_LAUNCH(SyncwarpOrdersKernel, 1, 32, 0, 0, out);
}
void LaunchDivergentBarrier() {
  SMOE_LAUNCH(DivergentBarrierKernel, 1, 32, 0, 0);
}
void LaunchDeadlock(int* out) { SMOE_LAUNCH(DeadlockKernel, 1, 64, 0, 0, out); }
void LaunchMaskMismatch(int* out) {
  SMOE_LAUNCH(MaskMismatchKernel, 1, 32, 0, 0, out);
}
void LaunchShuffleOrdersNothing(int* out) {
  SMOE_LAUNCH(ShuffleOrdersNothingKernel, 1, 32, 0, 0, out);
}
void LaunchSharedRace(int* out) {
  SMOE_LAUNCH(SharedRaceKernel, 1, 64, 0, 0, out);
}
void LaunchGlobalRace(int* out) {
  SMOE_LAUNCH(GlobalRaceKernel, 4, 32, 0, 0, out);
}
void LaunchUninitShared(int* out) {
  SMOE_LAUNCH(UninitSharedKernel, 1, 64, 0, 0, out);
}
void LaunchSharedOutOfBounds(int* out) {
  SMOE_LAUNCH(SharedOutOfBoundsKernel, 1, 64, 0, 0, out);
}

}  // namespace smoe::emu::test
