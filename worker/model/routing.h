// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/routing.h
//
// The routing vocabulary of worker/model: one struct for the result of
// routing N tokens to k of E experts, used by the SRAVEN SMoE layer (moe.h,
// every dispatch: ops, gather, dense and expert parallel), by the Mixtral
// runtime (mixtral/mixtral_model.h) and by the ops (ops/moe_ops.h). Names
// follow DeepEP and kernels/ (kernels/README.md): topk_idx, topk_weights,
// num_tokens_per_expert, expert_offsets.
//
// The one producer is ops::RouterTopK (ops/moe_ops.h): kernels::RouterTopK on
// CUDA tensors, its CPU reference RouterTopKRef otherwise; the top_k largest
// logits per token, ties to the lower expert index. The gating choice is
// RouterGating (model_config.h), which is kernels::RouterGating itself.
//
// Thread safety: plain values.
#ifndef SMOE_WORKER_MODEL_ROUTING_H_
#define SMOE_WORKER_MODEL_ROUTING_H_

#include <torch/types.h>

#include "worker/model/model_config.h"

namespace smoe::model {

// Routing of N tokens to top_k = k of E experts.
struct RouterOutput {
  // [N, k] int32: chosen experts by descending logit, ties -> lower index.
  torch::Tensor topk_idx;
  // [N, k] float32 (float64 for float64 CPU logits), by `gating`;
  // differentiable (gradients flow to the router logits).
  torch::Tensor topk_weights;
  // [E] int32: (token, choice) pairs routed to each expert (sums to N * k).
  torch::Tensor num_tokens_per_expert;
  // [E + 1] int32: exclusive prefix sum of num_tokens_per_expert.
  torch::Tensor expert_offsets;
};

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_ROUTING_H_
