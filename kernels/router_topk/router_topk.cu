// Copyright 2026 SMoE Lab authors.
//
// File: kernels/router_topk/router_topk.cu
//
// Fused router kernel: one warp per token row (the vLLM/TRT-LLM
// topkGatingSoftmax design). Each lane holds kPerLane logits in registers
// (expert e = lane + 32 * i), the warp computes the row max and the full
// softmax denominator with butterfly shuffles, then runs top_k argmax passes
// (value, index) with the tie rule "lower index wins", so no value leaves
// registers until the k winners are written. Per-expert counts go to a
// shared-memory histogram per block and then to global memory with one atomic
// per (block, expert); a one-block scan kernel turns them into offsets.
//
// Napkin math (bench: router_topk_bench.cu): the kernel reads T*E*4 bytes of
// logits and writes T*k*8 bytes; at T=16k, E=8, k=2 that is 0.79 MB, far
// below the ~2-3 us launch latency floor; at E=256 it is 17 MB -> ~5 us at
// 3.35 TB/s. Goal: <= 2x that memory floor at T >= 16k.
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_launch.cuh"
#include "kernels/router_topk/router_topk_launch.h"

namespace smoe::kernels {
namespace {

constexpr int kRouterWarpsPerBlock = 4;
constexpr int kScanThreads = 256;
constexpr int kMaxRouterBlocks = 2048;  // grid-stride loops cover the rest
static_assert(kRouterWarpsPerBlock * kWarpSize <= 1024, "block too large");

template <int kPerLane, bool kRenorm>
__global__ void RouterTopKKernel(const float* __restrict__ logits,
                                 int64_t num_tokens, int num_experts, int top_k,
                                 int32_t* __restrict__ topk_idx,
                                 float* __restrict__ topk_weights,
                                 int32_t* __restrict__ counts) {
  static_assert(kPerLane >= 1 && kPerLane <= 8, "taken mask is 8 bits");
  SMOE_DYNAMIC_SHARED(int32_t, s_counts);
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) s_counts[e] = 0;
  __syncthreads();

  const int lane = LaneId();
  const int64_t step = GridWarps();
  for (int64_t t = GlobalWarpId(); t < num_tokens; t += step) {
    const float* row = logits + t * num_experts;
    // Load: padding lanes hold -inf and never win (logits are finite).
    float v[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + kWarpSize * i;
      v[i] = e < num_experts ? __ldg(row + e) : -INFINITY;
    }
    float max = v[0];
#pragma unroll
    for (int i = 1; i < kPerLane; ++i) max = fmaxf(max, v[i]);
    max = WarpMax(max);
    float denom = 0.0f;
    if (!kRenorm) {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (lane + kWarpSize * i < num_experts) denom += expf(v[i] - max);
      }
      denom = WarpSum(denom);
    }
    // Top-k: k argmax passes; bit i of `taken` marks expert lane + 32 * i.
    unsigned taken = 0;
    float sel_sum = 0.0f;
    int64_t out = t * top_k;
    for (int j = 0; j < top_k; ++j) {
      float best_v = -INFINITY;
      int best_e = INT_MAX;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int e = lane + kWarpSize * i;
        // NOTE: ascending i and strict > keep the lower index within a lane.
        if (e < num_experts && !((taken >> i) & 1u) &&
            (best_e == INT_MAX || v[i] > best_v)) {
          best_v = v[i];
          best_e = e;
        }
      }
#pragma unroll
      for (int o = kWarpSize / 2; o > 0; o /= 2) {
        const float ov = __shfl_xor_sync(kFullWarpMask, best_v, o);
        const int oe = __shfl_xor_sync(kFullWarpMask, best_e, o);
        if (oe != INT_MAX && (best_e == INT_MAX || ov > best_v ||
                              (ov == best_v && oe < best_e))) {
          best_v = ov;
          best_e = oe;
        }
      }
      if (lane == best_e % kWarpSize) taken |= 1u << (best_e / kWarpSize);
      const float ex = expf(best_v - max);
      sel_sum += ex;  // same order (j ascending) as the reference
      if (lane == 0) {
        topk_idx[out + j] = best_e;
        topk_weights[out + j] = ex;
        atomicAdd(&s_counts[best_e], 1);
      }
    }
    if (kRenorm) denom = sel_sum;
    __syncwarp();  // NOTE: orders lane 0's writes before the reads below.
    for (int j = lane; j < top_k; j += kWarpSize) {
      topk_weights[out + j] = topk_weights[out + j] / denom;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) {
    if (s_counts[e] != 0) atomicAdd(&counts[e], s_counts[e]);
  }
}

__global__ void RouterTopKBackwardKernel(
    const float* __restrict__ logits, const int32_t* __restrict__ topk_idx,
    const float* __restrict__ topk_weights,
    const float* __restrict__ grad_topk_weights, int64_t num_tokens,
    int num_experts, int top_k, bool renorm, float* __restrict__ grad_logits) {
  const int lane = LaneId();
  const int64_t step = GridWarps();
  for (int64_t t = GlobalWarpId(); t < num_tokens; t += step) {
    const float* row = logits + t * num_experts;
    const int32_t* idx = topk_idx + t * top_k;
    const float* w = topk_weights + t * top_k;
    const float* g = grad_topk_weights + t * top_k;
    float* out = grad_logits + t * num_experts;
    float s = 0.0f;
    for (int j = lane; j < top_k; j += kWarpSize) s += w[j] * g[j];
    s = WarpSum(s);
    float max = -INFINITY, denom = 0.0f;
    if (!renorm) {
      for (int e = lane; e < num_experts; e += kWarpSize)
        max = fmaxf(max, row[e]);
      max = WarpMax(max);
      for (int e = lane; e < num_experts; e += kWarpSize) {
        denom += expf(row[e] - max);
      }
      denom = WarpSum(denom);
    }
    // NOTE: each lane writes only its own experts: no races, no zero pass.
    for (int e = lane; e < num_experts; e += kWarpSize) {
      int chosen = -1;
      for (int j = 0; j < top_k; ++j) {
        if (idx[j] == e) chosen = j;
      }
      if (renorm) {
        out[e] = chosen < 0 ? 0.0f : w[chosen] * (g[chosen] - s);
      } else {
        const float ge = chosen < 0 ? 0.0f : g[chosen];
        out[e] = expf(row[e] - max) / denom * (ge - s);
      }
    }
  }
}

// One block (BlockExclusiveScan); offsets[n] receives the total.
__global__ void ExclusiveScanKernel(const int32_t* __restrict__ counts, int n,
                                    int32_t* __restrict__ offsets) {
  const int32_t total = BlockExclusiveScan<kScanThreads>(counts, offsets, n);
  if (threadIdx.x == kScanThreads - 1) offsets[n] = total;
}

int RouterGrid(int64_t num_tokens) {
  return GridFor(num_tokens, kRouterWarpsPerBlock, kMaxRouterBlocks);
}

template <bool kRenorm>
cudaError_t LaunchRouterTopKT(const float* logits, int64_t num_tokens,
                              int num_experts, int top_k, int32_t* topk_idx,
                              float* topk_weights, int32_t* counts,
                              cudaStream_t stream) {
  const dim3 grid(RouterGrid(num_tokens));
  const dim3 block(kRouterWarpsPerBlock * kWarpSize);
  const size_t smem = sizeof(int32_t) * num_experts;
  if (num_experts <= 32) {
    SMOE_LAUNCH(SMOE_KERNEL(RouterTopKKernel<1, kRenorm>), grid, block, smem,
                stream, logits, num_tokens, num_experts, top_k, topk_idx,
                topk_weights, counts);
  } else if (num_experts <= 64) {
    SMOE_LAUNCH(SMOE_KERNEL(RouterTopKKernel<2, kRenorm>), grid, block, smem,
                stream, logits, num_tokens, num_experts, top_k, topk_idx,
                topk_weights, counts);
  } else if (num_experts <= 128) {
    SMOE_LAUNCH(SMOE_KERNEL(RouterTopKKernel<4, kRenorm>), grid, block, smem,
                stream, logits, num_tokens, num_experts, top_k, topk_idx,
                topk_weights, counts);
  } else {
    SMOE_LAUNCH(SMOE_KERNEL(RouterTopKKernel<8, kRenorm>), grid, block, smem,
                stream, logits, num_tokens, num_experts, top_k, topk_idx,
                topk_weights, counts);
  }
  return cudaPeekAtLastError();
}

}  // namespace

cudaError_t LaunchExclusiveScan(const int32_t* counts, int num_experts,
                                int32_t* expert_offsets, cudaStream_t stream) {
  if (num_experts < 1) return cudaErrorInvalidValue;
  SMOE_LAUNCH(ExclusiveScanKernel, 1, kScanThreads, 0, stream, counts,
              num_experts, expert_offsets);
  return cudaPeekAtLastError();
}

cudaError_t LaunchRouterTopK(const float* logits, int64_t num_tokens,
                             int num_experts, int top_k, int gating,
                             int32_t* topk_idx, float* topk_weights,
                             int32_t* num_tokens_per_expert,
                             int32_t* expert_offsets, cudaStream_t stream) {
  if (num_tokens < 0 || num_experts < 1 || num_experts > 256 || top_k < 1 ||
      top_k > num_experts || num_tokens_per_expert == nullptr ||
      expert_offsets == nullptr) {
    return cudaErrorInvalidValue;
  }
  SMOE_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      num_tokens_per_expert, 0, sizeof(int32_t) * num_experts, stream));
  if (num_tokens > 0) {
    SMOE_CUDA_RETURN_IF_ERROR(
        gating == 0 ? LaunchRouterTopKT<true>(logits, num_tokens, num_experts,
                                              top_k, topk_idx, topk_weights,
                                              num_tokens_per_expert, stream)
                    : LaunchRouterTopKT<false>(logits, num_tokens, num_experts,
                                               top_k, topk_idx, topk_weights,
                                               num_tokens_per_expert, stream));
  }
  return LaunchExclusiveScan(num_tokens_per_expert, num_experts, expert_offsets,
                             stream);
}

cudaError_t LaunchRouterTopKBackward(
    const float* logits, const int32_t* topk_idx, const float* topk_weights,
    const float* grad_topk_weights, int64_t num_tokens, int num_experts,
    int top_k, int gating, float* grad_logits, cudaStream_t stream) {
  if (num_tokens < 0 || num_experts < 1 || top_k < 1 || top_k > num_experts) {
    return cudaErrorInvalidValue;
  }
  if (num_tokens == 0) return cudaSuccess;
  SMOE_LAUNCH(RouterTopKBackwardKernel, RouterGrid(num_tokens),
              kRouterWarpsPerBlock * kWarpSize, 0, stream, logits, topk_idx,
              topk_weights, grad_topk_weights, num_tokens, num_experts, top_k,
              gating == 0, grad_logits);
  return cudaPeekAtLastError();
}

}  // namespace smoe::kernels
