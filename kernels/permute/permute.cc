// Copyright 2026 SMoE Lab authors.
//
// Host wrappers of the permute kernels: validate, launch, convert errors.
#include "kernels/permute/permute.h"

#include "common/status_macros.h"
#include "kernels/common/cuda_status.h"
#include "kernels/permute/permute_launch.h"

namespace smoe::kernels {
namespace {

absl::Status CheckPlan(const PermutePlan& plan, int64_t hidden) {
  SMOE_RETURN_IF_ERROR(ValidatePermuteArgs(plan.num_tokens, plan.num_experts,
                                           plan.top_k, hidden,
                                           /*for_gpu=*/true));
  if (plan.num_rows() > 0 &&
      (plan.sorted_idx == nullptr || plan.dest_idx == nullptr)) {
    return absl::InvalidArgumentError("plan.sorted_idx/dest_idx are null");
  }
  return absl::OkStatus();
}

}  // namespace

size_t PermutePlanWorkspaceBytes(int64_t num_tokens, int top_k,
                                 int num_experts) {
  return LaunchPermutePlanWorkspaceBytes(num_tokens * top_k, num_experts);
}

absl::Status BuildPermutePlan(const int32_t* topk_idx, const PermutePlan& plan,
                              int32_t* num_tokens_per_expert, void* workspace,
                              cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, /*hidden=*/1));
  if (plan.expert_offsets == nullptr || num_tokens_per_expert == nullptr ||
      workspace == nullptr) {
    return absl::InvalidArgumentError(
        "expert_offsets, num_tokens_per_expert and workspace must not be "
        "null");
  }
  return CudaStatus(LaunchBuildPermutePlan(
                        topk_idx, plan.num_rows(), plan.num_experts,
                        plan.sorted_idx, plan.dest_idx, plan.expert_offsets,
                        num_tokens_per_expert, workspace, stream),
                    "BuildPermutePlan");
}

absl::Status Permute(const void* x, DType dtype, int64_t hidden,
                     const PermutePlan& plan, void* permuted,
                     cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, hidden));
  return CudaStatus(
      LaunchGatherRows(x, permuted, plan.num_rows(),
                       hidden * static_cast<int64_t>(DTypeSize(dtype)),
                       plan.sorted_idx, plan.top_k, stream),
      "Permute");
}

absl::Status Unpermute(const void* permuted, DType dtype, int64_t hidden,
                       const PermutePlan& plan, void* out,
                       cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, hidden));
  return CudaStatus(
      LaunchGatherRows(permuted, out, plan.num_rows(),
                       hidden * static_cast<int64_t>(DTypeSize(dtype)),
                       plan.dest_idx, /*divisor=*/1, stream),
      "Unpermute");
}

absl::Status PermuteBackward(const void* grad_permuted, DType dtype,
                             int64_t hidden, const PermutePlan& plan,
                             void* grad_x, cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, hidden));
  SMOE_RETURN_IF_ERROR(CheckKernelFloatDType(dtype));
  return CudaStatus(
      LaunchCombine(grad_permuted, /*weights=*/nullptr, static_cast<int>(dtype),
                    plan.num_tokens, plan.top_k, hidden, plan.dest_idx, grad_x,
                    stream),
      "PermuteBackward");
}

absl::Status Combine(const void* expert_out, const float* topk_weights,
                     DType dtype, int64_t hidden, const PermutePlan& plan,
                     void* out, cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, hidden));
  SMOE_RETURN_IF_ERROR(CheckKernelFloatDType(dtype));
  if (topk_weights == nullptr && plan.num_rows() > 0) {
    return absl::InvalidArgumentError("topk_weights is null");
  }
  return CudaStatus(
      LaunchCombine(expert_out, topk_weights, static_cast<int>(dtype),
                    plan.num_tokens, plan.top_k, hidden, plan.dest_idx, out,
                    stream),
      "Combine");
}

absl::Status CombineBackward(const void* grad_out, const void* expert_out,
                             const float* topk_weights, DType dtype,
                             int64_t hidden, const PermutePlan& plan,
                             void* grad_expert_out, float* grad_topk_weights,
                             cudaStream_t stream) {
  SMOE_RETURN_IF_ERROR(CheckPlan(plan, hidden));
  SMOE_RETURN_IF_ERROR(CheckKernelFloatDType(dtype));
  if (topk_weights == nullptr && plan.num_rows() > 0) {
    return absl::InvalidArgumentError("topk_weights is null");
  }
  return CudaStatus(
      LaunchCombineBackward(grad_out, expert_out, topk_weights,
                            static_cast<int>(dtype), plan.num_tokens,
                            plan.top_k, hidden, plan.dest_idx, grad_expert_out,
                            grad_topk_weights, stream),
      "CombineBackward");
}

}  // namespace smoe::kernels
