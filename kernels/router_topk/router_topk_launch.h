// Copyright 2026 SMoE Lab authors.
//
// File: kernels/router_topk/router_topk_launch.h
//
// Raw launchers defined in router_topk.cu (no absl, no torch). Called by the
// host wrappers in router_topk.cc, which validate arguments first and convert
// the returned cudaError_t into absl::Status. Arguments and REQUIRES as in
// router_topk.h; the launchers re-check only what would corrupt memory and
// return cudaErrorInvalidValue for it.
#ifndef SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_LAUNCH_H_
#define SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace smoe::kernels {

// gating: 0 = RouterGating::kRenormalized, 1 = kNoRenorm.
cudaError_t LaunchRouterTopK(const float* logits, int64_t num_tokens,
                             int num_experts, int top_k, int gating,
                             int32_t* topk_idx, float* topk_weights,
                             int32_t* num_tokens_per_expert,
                             int32_t* expert_offsets, cudaStream_t stream);

cudaError_t LaunchRouterTopKBackward(
    const float* logits, const int32_t* topk_idx, const float* topk_weights,
    const float* grad_topk_weights, int64_t num_tokens, int num_experts,
    int top_k, int gating, float* grad_logits, cudaStream_t stream);

// Writes expert_offsets[0..num_experts] = exclusive prefix sum of
// counts[0..num_experts-1] (one block). Shared with kernels/permute.
cudaError_t LaunchExclusiveScan(const int32_t* counts, int num_experts,
                                int32_t* expert_offsets, cudaStream_t stream);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_LAUNCH_H_
