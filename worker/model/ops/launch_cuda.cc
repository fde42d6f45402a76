// Copyright 2026 SMoE Lab authors.
//
// The CUDA side of worker/model/ops/launch.h: the lines of the ops that only
// a CUDA build with CUDA-enabled LibTorch compiles and only a GPU executes
// (docs/gpu-only-lines.md). Each function is a device guard, the current
// stream and one kernels/ call; everything it is handed was allocated,
// shaped and typed by code that CI runs on the CPU.
#include <torch/torch.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/model/ops/launch.h"

#if defined(SMOE_WITH_TORCH_CUDA) && defined(SMOE_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"
#define SMOE_OPS_CUDA 1
#endif

namespace smoe::model::ops::launch::cuda {

#if SMOE_OPS_CUDA
namespace {

cudaStream_t Stream(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
kernels::DType KDType(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kBFloat16:
      return kernels::DType::kBFloat16;
    case torch::kFloat64:
      return kernels::DType::kFloat64;
    case torch::kFloat16:
      return kernels::DType::kFloat16;
    default:
      return kernels::DType::kFloat32;
  }
}
float* F32(const torch::Tensor& t) { return t.data_ptr<float>(); }
int32_t* I32(const torch::Tensor& t) { return t.data_ptr<int32_t>(); }
torch::Tensor Workspace(size_t bytes, const torch::Tensor& like) {
  return torch::empty({static_cast<int64_t>(bytes) + 16},
                      like.options().dtype(torch::kUInt8));
}

// One grouped GEMM in the variant chosen for its size
// (kernels::ChooseGroupedGemmVariant), falling back to the per-expert loop
// when this cuBLAS has no grouped mode (older than 12.5) or none for the dtype
// (kernels::GroupedGemmFallbackVariant); both unit-tested on the CPU.
template <typename Call>
absl::Status WithFallback(kernels::GroupedGemmVariant first, const Call& call) {
  absl::Status s = call(first);
  if (const std::optional<kernels::GroupedGemmVariant> v =
          kernels::GroupedGemmFallbackVariant(first, s)) {
    s = call(*v);
  }
  return s;
}

}  // namespace

absl::Status RouterTopK(const torch::Tensor& logits, int top_k,
                        kernels::RouterGating gating, const torch::Tensor& idx,
                        const torch::Tensor& w, const torch::Tensor& counts,
                        const torch::Tensor& offsets) {
  c10::cuda::CUDAGuard guard(logits.device());
  return kernels::RouterTopK(
      F32(logits), logits.size(0), static_cast<int>(logits.size(1)), top_k,
      gating, I32(idx), F32(w), I32(counts), I32(offsets), Stream(logits));
}

absl::Status RouterTopKBackward(const torch::Tensor& logits,
                                const torch::Tensor& idx,
                                const torch::Tensor& w, const torch::Tensor& g,
                                kernels::RouterGating gating,
                                const torch::Tensor& grad_logits) {
  c10::cuda::CUDAGuard guard(logits.device());
  return kernels::RouterTopKBackward(
      F32(logits), I32(idx), F32(w), F32(g), logits.size(0),
      static_cast<int>(logits.size(1)), static_cast<int>(idx.size(1)), gating,
      F32(grad_logits), Stream(logits));
}

absl::Status BuildPlan(const torch::Tensor& idx, const Plan& plan,
                       const torch::Tensor& counts) {
  c10::cuda::CUDAGuard guard(idx.device());
  torch::Tensor ws =
      Workspace(kernels::PermutePlanWorkspaceBytes(plan.num_tokens, plan.top_k,
                                                   plan.num_experts),
                idx);
  return kernels::BuildPermutePlan(I32(idx), plan.View(), I32(counts),
                                   ws.data_ptr(), Stream(idx));
}

absl::Status Permute(const torch::Tensor& x, const Plan& plan,
                     const torch::Tensor& permuted) {
  c10::cuda::CUDAGuard guard(x.device());
  return kernels::Permute(x.data_ptr(), KDType(x), x.size(1), plan.View(),
                          permuted.data_ptr(), Stream(x));
}

absl::Status PermuteBackward(const torch::Tensor& grad_permuted,
                             const Plan& plan, const torch::Tensor& grad_x) {
  c10::cuda::CUDAGuard guard(grad_permuted.device());
  return kernels::PermuteBackward(
      grad_permuted.data_ptr(), KDType(grad_permuted), grad_permuted.size(1),
      plan.View(), grad_x.data_ptr(), Stream(grad_permuted));
}

absl::Status Combine(const torch::Tensor& y, const torch::Tensor& w,
                     const Plan& plan, const torch::Tensor& out) {
  c10::cuda::CUDAGuard guard(y.device());
  return kernels::Combine(y.data_ptr(), F32(w), KDType(y), y.size(1),
                          plan.View(), out.data_ptr(), Stream(y));
}

absl::Status CombineBackward(const torch::Tensor& grad_out,
                             const torch::Tensor& y, const torch::Tensor& w,
                             const Plan& plan, const torch::Tensor& grad_y,
                             const torch::Tensor& grad_w) {
  c10::cuda::CUDAGuard guard(y.device());
  return kernels::CombineBackward(grad_out.data_ptr(), y.data_ptr(), F32(w),
                                  KDType(y), y.size(1), plan.View(),
                                  grad_y.data_ptr(), F32(grad_w), Stream(y));
}

absl::Status GroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                         const torch::Tensor& c, const Plan& plan,
                         bool trans_b) {
  c10::cuda::CUDAGuard guard(a.device());
  const int64_t k = a.size(1), n = c.size(1);
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(plan.num_experts), a);
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  return WithFallback(kernels::ChooseGroupedGemmVariant(
                          plan.host_offsets.data(), plan.num_experts, k, n),
                      [&](kernels::GroupedGemmVariant v) {
                        return kernels::GroupedGemm(
                            h, a.data_ptr(), b.data_ptr(), c.data_ptr(),
                            KDType(a), plan.host_offsets.data(),
                            plan.num_experts, k, n, trans_b, v, ws.data_ptr(),
                            Stream(a));
                      });
}

absl::Status GroupedGemmWeightGrad(const torch::Tensor& a,
                                   const torch::Tensor& dc,
                                   const torch::Tensor& db, const Plan& plan) {
  c10::cuda::CUDAGuard guard(a.device());
  const int64_t k = a.size(1), n = dc.size(1);
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(plan.num_experts), a);
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  return WithFallback(kernels::ChooseGroupedGemmVariant(
                          plan.host_offsets.data(), plan.num_experts, k, n),
                      [&](kernels::GroupedGemmVariant v) {
                        return kernels::GroupedGemmWeightGrad(
                            h, a.data_ptr(), dc.data_ptr(), db.data_ptr(),
                            KDType(a), plan.host_offsets.data(),
                            plan.num_experts, k, n, v, ws.data_ptr(),
                            Stream(a));
                      });
}

#else  // no CUDA kernels for LibTorch CUDA tensors in this build

namespace {
absl::Status NoCuda(const char* op) {
  return absl::UnimplementedError(absl::StrCat(
      op,
      ": a CUDA tensor reached the MoE ops, but this build has no CUDA "
      "kernels for LibTorch (needs nvcc and CUDA-enabled LibTorch: "
      "docs/gpu-build.md)"));
}
}  // namespace

absl::Status RouterTopK(const torch::Tensor&, int, kernels::RouterGating,
                        const torch::Tensor&, const torch::Tensor&,
                        const torch::Tensor&, const torch::Tensor&) {
  return NoCuda("RouterTopK");
}
absl::Status RouterTopKBackward(const torch::Tensor&, const torch::Tensor&,
                                const torch::Tensor&, const torch::Tensor&,
                                kernels::RouterGating, const torch::Tensor&) {
  return NoCuda("RouterTopKBackward");
}
absl::Status BuildPlan(const torch::Tensor&, const Plan&,
                       const torch::Tensor&) {
  return NoCuda("BuildPermutePlan");
}
absl::Status Permute(const torch::Tensor&, const Plan&, const torch::Tensor&) {
  return NoCuda("Permute");
}
absl::Status PermuteBackward(const torch::Tensor&, const Plan&,
                             const torch::Tensor&) {
  return NoCuda("PermuteBackward");
}
absl::Status Combine(const torch::Tensor&, const torch::Tensor&, const Plan&,
                     const torch::Tensor&) {
  return NoCuda("Combine");
}
absl::Status CombineBackward(const torch::Tensor&, const torch::Tensor&,
                             const torch::Tensor&, const Plan&,
                             const torch::Tensor&, const torch::Tensor&) {
  return NoCuda("CombineBackward");
}
absl::Status GroupedGemm(const torch::Tensor&, const torch::Tensor&,
                         const torch::Tensor&, const Plan&, bool) {
  return NoCuda("GroupedGemm");
}
absl::Status GroupedGemmWeightGrad(const torch::Tensor&, const torch::Tensor&,
                                   const torch::Tensor&, const Plan&) {
  return NoCuda("GroupedGemmWeightGrad");
}

#endif

}  // namespace smoe::model::ops::launch::cuda
