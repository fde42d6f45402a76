// Copyright 2026 SMoE Lab authors.
//
// File: kernels/router_topk/router_topk.h
//
// Fused MoE router: logits [num_tokens, num_experts] f32 -> softmax -> top-k
// -> gate weights, plus per-expert token counts and their exclusive prefix
// sum, in one pass over the logits. And its backward: grad logits from grad
// gate weights.
//
// Selection: the top_k largest LOGITS of each row (softmax is monotone, so
// this is the top-k of the probabilities without the rounding ties that exp()
// would create). Tie rule: equal logits -> the LOWER expert index wins, in
// the reference and the kernel alike, so topk_idx compares exactly. Within a
// row topk_idx is ordered by descending logit.
//
// Gate weights (RouterGating, also the model's enum: worker/model/
// model_config.h uses it directly, config strings in brackets):
//   kRenormalized:  w_j = exp(l_j) / sum_{chosen c} exp(l_c)  (softmax over
//                   all E then top-k then renormalise; equals softmax over the
//                   chosen k logits [topk_then_softmax])
//   kNoRenorm:      w_j = exp(l_j) / sum_{all e} exp(l_e)   (softmax over all E
//                   then top-k, no renormalisation [softmax_then_topk])
//
// Shapes (DeepEP names): topk_idx [num_tokens, top_k] int32, topk_weights
// [num_tokens, top_k] f32, num_tokens_per_expert [num_experts] int32,
// expert_offsets [num_experts + 1] int32 (exclusive prefix sum; the last entry
// is num_tokens * top_k).
//
// REQUIRES (all entry points): num_tokens >= 0, 1 <= top_k <= num_experts,
// logits finite. The GPU path additionally requires num_experts <=
// kMaxRouterExperts and num_tokens * top_k < 2^31.
//
// Thread-safety: the functions are stateless; concurrent calls on disjoint
// buffers are safe.
#ifndef SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_H_
#define SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_H_

#include <cstdint>

#include "absl/status/status.h"

#if defined(SMOE_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {

enum class RouterGating : int {
  kRenormalized = 0,  // top-k weights sum to 1 per token
  kNoRenorm = 1,      // top-k of the full softmax, not renormalised
};

// Largest num_experts the GPU kernel supports (32 lanes x 8 registers).
inline constexpr int kMaxRouterExperts = 256;

// Returns InvalidArgument naming the field and value when the sizes violate
// the REQUIRES above (`for_gpu` adds the GPU-only limits).
absl::Status ValidateRouterArgs(int64_t num_tokens, int num_experts, int top_k,
                                bool for_gpu);

// CPU reference (simple loops, always compiled). Writes topk_idx,
// topk_weights, num_tokens_per_expert and expert_offsets. Any of
// num_tokens_per_expert / expert_offsets may be null to skip it.
void RouterTopKRef(const float* logits, int64_t num_tokens, int num_experts,
                   int top_k, RouterGating gating, int32_t* topk_idx,
                   float* topk_weights, int32_t* num_tokens_per_expert,
                   int32_t* expert_offsets);
// The same in double precision (the ops' float64 gradient checks).
void RouterTopKRef(const double* logits, int64_t num_tokens, int num_experts,
                   int top_k, RouterGating gating, int32_t* topk_idx,
                   double* topk_weights, int32_t* num_tokens_per_expert,
                   int32_t* expert_offsets);

// CPU reference backward. Given the forward's inputs and outputs and
// grad_topk_weights [num_tokens, top_k], writes grad_logits [num_tokens,
// num_experts] (every element):
//   kRenormalized: grad l_{i_j} = w_j (g_j - s), other experts 0,
//   kNoRenorm:     grad l_e = p_e (G_e - s), G_e = g_j if e == i_j else 0,
// with s = sum_j w_j g_j and p the full softmax.
void RouterTopKBackwardRef(const float* logits, const int32_t* topk_idx,
                           const float* topk_weights,
                           const float* grad_topk_weights, int64_t num_tokens,
                           int num_experts, int top_k, RouterGating gating,
                           float* grad_logits);
void RouterTopKBackwardRef(const double* logits, const int32_t* topk_idx,
                           const double* topk_weights,
                           const double* grad_topk_weights, int64_t num_tokens,
                           int num_experts, int top_k, RouterGating gating,
                           double* grad_logits);

#if defined(SMOE_WITH_CUDA)
// GPU versions of the two functions above. All pointers are device pointers;
// num_tokens_per_expert and expert_offsets are required (not null). Work is
// enqueued on `stream` (asynchronous). On error nothing is guaranteed about
// the outputs; the status names the failing step and the CUDA error.
absl::Status RouterTopK(const float* logits, int64_t num_tokens,
                        int num_experts, int top_k, RouterGating gating,
                        int32_t* topk_idx, float* topk_weights,
                        int32_t* num_tokens_per_expert, int32_t* expert_offsets,
                        cudaStream_t stream);

absl::Status RouterTopKBackward(const float* logits, const int32_t* topk_idx,
                                const float* topk_weights,
                                const float* grad_topk_weights,
                                int64_t num_tokens, int num_experts, int top_k,
                                RouterGating gating, float* grad_logits,
                                cudaStream_t stream);
#endif  // SMOE_WITH_CUDA

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_H_
