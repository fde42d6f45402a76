// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/ops/moe_ops.h
//
// LibTorch autograd operations over the MoE dispatch kernels of kernels/
// (router_topk, permute, grouped_gemm). The SMoE layer (moe.h, Dispatch::kOps)
// chains them as
//
//   RouterTopK(logits) -> BuildPermutePlan(topk_idx) -> Permute(x)
//     -> ExpertMlp(buffer) -> Combine(expert_out, topk_weights)
//
// so the experts run on contiguous expert-major slices and the gate weights
// are applied once, in the combine (kernels/permute/permute.h has the exact
// formulas, the tie rule and the stable row order).
//
// One code path (launch.h): validation, allocation, dtypes, the plan and the
// autograd bookkeeping are the same code on CPU and CUDA; only the kernel
// launches differ:
//   CUDA tensors: the kernels/ CUDA kernels and cuBLAS on
//       c10::cuda::getCurrentCUDAStream() (launch_cuda.cc; compiled only
//       with CUDA-enabled LibTorch, SMOE_WITH_TORCH_CUDA; without it a CUDA
//       tensor gets Unimplemented, never a silent fallback).
//   CPU tensors: the kernels' CPU references (*Ref) in float32 and float64,
//       bf16 through the float32 reference with the GPU kernels' rounding;
//       the expert GEMMs are one torch::mm per non-empty expert.
// Mixed precision: the router always computes in float32 (bf16 logits are
// cast up); under autocast (CPU or CUDA, worker/model/autocast.h) MoeForward
// runs permute, the expert GEMMs and combine in autocast's dtype with
// float32 gate weights, on both devices.
//
// Gradients: every op is a torch::autograd::Function whose backward is the
// kernel's backward (RouterTopKBackward, PermuteBackward, CombineBackward,
// GroupedGemm with trans_b / GroupedGemmWeightGrad). Integer outputs
// (topk_idx, counts, offsets) are non-differentiable.
//
// Errors: the functions below validate their inputs and return
// InvalidArgument naming the argument and the value. A kernel failure inside
// an autograd backward cannot return a Status; it raises c10::Error (LibTorch's
// convention), which the trainer's entry points convert.
//
// Thread-safety: stateless functions; concurrent calls on distinct tensors
// are safe. A Plan is immutable once built and may be shared.
#ifndef SMOE_WORKER_MODEL_OPS_MOE_OPS_H_
#define SMOE_WORKER_MODEL_OPS_MOE_OPS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"
#include "worker/model/routing.h"

namespace smoe::model::ops {

// True when this build calls the CUDA kernels for CUDA tensors (CUDA-enabled
// LibTorch and kernels/ compiled with CUDA).
bool KernelsOnCuda();

// Routes logits [N, E] (floating point, any device): the top_k largest
// logits per row (ties -> lower expert index), gate weights by `gating`,
// per-expert counts and offsets (RouterOutput, worker/model/routing.h). The
// model's only top-k router. Gradients flow from topk_weights to logits.
// REQUIRES: logits 2-D with finite values, 1 <= top_k <= E.
absl::StatusOr<RouterOutput> RouterTopK(const torch::Tensor& logits, int top_k,
                                        kernels::RouterGating gating);

// Owning PermutePlan (kernels/permute/permute.h) on the device of the
// topk_idx it was built from, plus the host copy of the offsets that the
// grouped GEMM needs (one device-to-host copy per layer on CUDA).
struct Plan {
  torch::Tensor sorted_idx;      // [N * k] int32: flat pair at each buffer row
  torch::Tensor dest_idx;        // [N * k] int32: buffer row of each pair
  torch::Tensor expert_offsets;  // [E + 1] int32
  std::vector<int64_t> host_offsets;  // [E + 1], == expert_offsets
  int64_t num_tokens = 0;
  int top_k = 1;
  int num_experts = 1;

  int64_t num_rows() const { return num_tokens * top_k; }
  // Non-owning kernels view (pointers into the tensors above).
  kernels::PermutePlan View() const;
};

// Builds the plan from topk_idx [N, k] (int32 or int64, any device).
// REQUIRES: every entry in [0, num_experts), 1 <= k <= num_experts.
absl::StatusOr<Plan> BuildPermutePlan(const torch::Tensor& topk_idx,
                                      int num_experts);

// Returns the expert-major buffer [N * k, D]: row p = x[sorted_idx[p] / k].
// Backward: grad_x[t] = sum_j grad_buffer[dest_idx[t * k + j]].
// REQUIRES: x [N, D] with N == plan.num_tokens, on the plan's device.
absl::StatusOr<torch::Tensor> Permute(const torch::Tensor& x, const Plan& plan);

// Returns out [N, D], out[t] = sum_j topk_weights[t, j] *
// expert_out[dest_idx[t * k + j]] (ascending j). Backward: grad expert_out
// and grad topk_weights (CombineBackward).
// REQUIRES: expert_out [N * k, D], topk_weights [N, k], same dtype and device.
absl::StatusOr<torch::Tensor> Combine(const torch::Tensor& expert_out,
                                      const torch::Tensor& topk_weights,
                                      const Plan& plan);

// Returns out [R, n], out[rows of e] = a[rows of e] . weight[e] + bias[e],
// the rows of expert e being [host_offsets[e], host_offsets[e + 1]).
// Backward: grad a (grouped GEMM with trans_b), grad weight (grouped weight
// grad; zero for experts without rows) and grad bias (per-expert row sums).
// REQUIRES: a [R, k_in] with R == plan.num_rows(), weight [E, k_in, n],
// bias [E, n], one dtype and device.
absl::StatusOr<torch::Tensor> GroupedLinear(const torch::Tensor& a,
                                            const torch::Tensor& weight,
                                            const torch::Tensor& bias,
                                            const Plan& plan);

// Returns every expert's GELU(tanh) MLP over its slice of the buffer:
// GroupedLinear(GELU(GroupedLinear(buffer, w1, b1)), w2, b2); w1 [E, D, mlp],
// b1 [E, mlp], w2 [E, mlp, D], b2 [E, D]. Differentiable in every input.
// On CPU float32/float64 outside autocast (FusedExpertMlpSupported): one
// autograd op that runs expert by expert, forward and backward, so each
// expert's [rows, mlp] intermediates are used while in cache: both GEMMs
// with the bias folded into an addmm, the GELU as one pass, and in the
// backward the GELU gradient and the b1 gradient as one pass; the bias
// gradients are summed over fixed 256-row blocks per expert in block order
// (the same for any thread count, and the same blocks as GroupedLinear's
// CPU bias gradient). Elsewhere (CUDA, bf16, autocast), or with unfused =
// true (tests): GroupedLinear, GeluTanh, GroupedLinear.
bool FusedExpertMlpSupported(const torch::Tensor& buffer);
absl::StatusOr<torch::Tensor> ExpertMlp(const torch::Tensor& buffer,
                                        const torch::Tensor& w1,
                                        const torch::Tensor& b1,
                                        const torch::Tensor& w2,
                                        const torch::Tensor& b2,
                                        const Plan& plan, bool unfused = false);

// The experts' part of the top-k MoE feed-forward on flat tokens x [N, D]
// routed by `routing` (from RouterTopK): BuildPermutePlan, Permute,
// ExpertMlp, Combine with routing.topk_weights. Under autocast the expert
// path runs in autocast's dtype (weights float32).
// REQUIRES: w1 [E, D, mlp], b1 [E, mlp], w2 [E, mlp, D], b2 [E, D] with
// E == routing.num_tokens_per_expert.numel().
absl::StatusOr<torch::Tensor> RoutedExperts(const torch::Tensor& x,
                                            const RouterOutput& routing,
                                            const torch::Tensor& w1,
                                            const torch::Tensor& b1,
                                            const torch::Tensor& w2,
                                            const torch::Tensor& b2);

// The whole top-k MoE feed-forward on flat tokens x [N, D] with router
// logits [N, E]: RouterTopK, then RoutedExperts. `routing` (optional)
// receives the router output (counts for the load-balancing loss and
// telemetry).
absl::StatusOr<torch::Tensor> MoeForward(
    const torch::Tensor& x, const torch::Tensor& logits, int top_k,
    kernels::RouterGating gating, const torch::Tensor& w1,
    const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
    RouterOutput* routing);

}  // namespace smoe::model::ops

#endif  // SMOE_WORKER_MODEL_OPS_MOE_OPS_H_
