// Copyright 2026 SMoE Lab authors.
//
// Host wrappers of the router kernels: validate, launch, convert errors.
#include "kernels/router_topk/router_topk.h"

#include "common/status_macros.h"
#include "kernels/common/cuda_status.h"
#include "kernels/router_topk/router_topk_launch.h"

namespace smoe::kernels {

absl::Status RouterTopK(const float* logits, int64_t num_tokens,
                        int num_experts, int top_k, RouterGating gating,
                        int32_t* topk_idx, float* topk_weights,
                        int32_t* num_tokens_per_expert, int32_t* expert_offsets,
                        cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(
      ValidateRouterArgs(num_tokens, num_experts, top_k, /*for_gpu=*/true));
  if (num_tokens_per_expert == nullptr || expert_offsets == nullptr) {
    return absl::InvalidArgumentError(
        "num_tokens_per_expert and expert_offsets must not be null");
  }
  return CudaStatus(
      LaunchRouterTopK(logits, num_tokens, num_experts, top_k,
                       static_cast<int>(gating), topk_idx, topk_weights,
                       num_tokens_per_expert, expert_offsets, stream),
      "RouterTopK");
}

absl::Status RouterTopKBackward(const float* logits, const int32_t* topk_idx,
                                const float* topk_weights,
                                const float* grad_topk_weights,
                                int64_t num_tokens, int num_experts, int top_k,
                                RouterGating gating, float* grad_logits,
                                cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(
      ValidateRouterArgs(num_tokens, num_experts, top_k, /*for_gpu=*/true));
  return CudaStatus(
      LaunchRouterTopKBackward(
          logits, topk_idx, topk_weights, grad_topk_weights, num_tokens,
          num_experts, top_k, static_cast<int>(gating), grad_logits, stream),
      "RouterTopKBackward");
}

}  // namespace smoe::kernels
