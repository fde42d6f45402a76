// Copyright 2026 SMoE Lab authors.
//
// The device side of worker/model/ops/launch.h: one kernels/ call per op,
// compiled in every build with the kernels (SMOE_WITH_CUDA). What only a GPU
// executes is the Launch helper's CUDA branch below (a device guard,
// LibTorch's current stream and cuBLAS handle; CUDA-enabled LibTorch only,
// docs/gpu-only-lines.md). Its host branch serves CPU tensors when a test
// routes them here (launch::SetHostTensorsThroughKernelsForTesting): over the
// fake CUDA runtime, whose "device memory" is host memory and whose kernel
// launches run the real kernels on the CPU emulator (tests/fakes), the same
// lines below run in CI with the kernels' own code.
#include <torch/torch.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "worker/model/ops/launch.h"

#if defined(SMOE_WITH_CUDA)
#include "kernels/common/cuda_status.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"
#if defined(SMOE_WITH_TORCH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#define SMOE_OPS_KERNELS 1
#endif

namespace smoe::model::ops::launch::cuda {

#if SMOE_OPS_KERNELS
namespace {

// One launch's device context: for a CUDA tensor, its device (guard),
// LibTorch's current stream and cuBLAS handle; for a CPU tensor (the test
// route over the fake runtime), the default stream, a per-thread handle, and
// a synchronize after the launch: the next CPU op reads the outputs at once,
// where on a GPU LibTorch orders it after the kernel on the same stream.
class Launch {
 public:
  Launch(const torch::Tensor& t, const char* op) : host_(!t.is_cuda()) {
    (void)op;  // named in the error of a build without CUDA LibTorch
#if defined(SMOE_WITH_TORCH_CUDA)
    if (!host_) {
      guard_.emplace(t.device());
      stream_ = c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
    }
#else
    if (!host_) {
      status_ = absl::UnimplementedError(absl::StrCat(
          op,
          ": a CUDA tensor reached the MoE ops, but this build's LibTorch has "
          "no CUDA (needs CUDA-enabled LibTorch: docs/gpu-build.md)"));
    }
#endif
  }
  const absl::Status& status() const { return status_; }
  cudaStream_t stream() const { return stream_; }
  absl::StatusOr<cublasHandle_t> Blas() const {
#if defined(SMOE_WITH_TORCH_CUDA)
    if (!host_) return at::cuda::getCurrentCUDABlasHandle();
#endif
    return kernels::ThreadCublasHandle();
  }
  // The launch's result; on the host branch, after the stream drained.
  absl::Status Done(absl::Status launched) const {
    if (!launched.ok() || !host_) return launched;
    return kernels::CudaStatus(cudaStreamSynchronize(stream_),
                               "cudaStreamSynchronize");
  }

 private:
  bool host_;
  absl::Status status_;
  cudaStream_t stream_ = nullptr;
#if defined(SMOE_WITH_TORCH_CUDA)
  std::optional<c10::cuda::CUDAGuard> guard_;
#endif
};

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
  const Launch l(logits, "RouterTopK");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::RouterTopK(
      F32(logits), logits.size(0), static_cast<int>(logits.size(1)), top_k,
      gating, I32(idx), F32(w), I32(counts), I32(offsets), l.stream()));
}

absl::Status RouterTopKBackward(const torch::Tensor& logits,
                                const torch::Tensor& idx,
                                const torch::Tensor& w, const torch::Tensor& g,
                                kernels::RouterGating gating,
                                const torch::Tensor& grad_logits) {
  const Launch l(logits, "RouterTopKBackward");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::RouterTopKBackward(
      F32(logits), I32(idx), F32(w), F32(g), logits.size(0),
      static_cast<int>(logits.size(1)), static_cast<int>(idx.size(1)), gating,
      F32(grad_logits), l.stream()));
}

absl::Status BuildPlan(const torch::Tensor& idx, const Plan& plan,
                       const torch::Tensor& counts) {
  const Launch l(idx, "BuildPermutePlan");
  if (!l.status().ok()) return l.status();
  torch::Tensor ws =
      Workspace(kernels::PermutePlanWorkspaceBytes(plan.num_tokens, plan.top_k,
                                                   plan.num_experts),
                idx);
  return l.Done(kernels::BuildPermutePlan(I32(idx), plan.View(), I32(counts),
                                          ws.data_ptr(), l.stream()));
}

absl::Status Permute(const torch::Tensor& x, const Plan& plan,
                     const torch::Tensor& permuted) {
  const Launch l(x, "Permute");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::Permute(x.data_ptr(), KDType(x), x.size(1),
                                 plan.View(), permuted.data_ptr(), l.stream()));
}

absl::Status PermuteBackward(const torch::Tensor& grad_permuted,
                             const Plan& plan, const torch::Tensor& grad_x) {
  const Launch l(grad_permuted, "PermuteBackward");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::PermuteBackward(
      grad_permuted.data_ptr(), KDType(grad_permuted), grad_permuted.size(1),
      plan.View(), grad_x.data_ptr(), l.stream()));
}

absl::Status Combine(const torch::Tensor& y, const torch::Tensor& w,
                     const Plan& plan, const torch::Tensor& out) {
  const Launch l(y, "Combine");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::Combine(y.data_ptr(), F32(w), KDType(y), y.size(1),
                                 plan.View(), out.data_ptr(), l.stream()));
}

absl::Status CombineBackward(const torch::Tensor& grad_out,
                             const torch::Tensor& y, const torch::Tensor& w,
                             const Plan& plan, const torch::Tensor& grad_y,
                             const torch::Tensor& grad_w) {
  const Launch l(y, "CombineBackward");
  if (!l.status().ok()) return l.status();
  return l.Done(kernels::CombineBackward(
      grad_out.data_ptr(), y.data_ptr(), F32(w), KDType(y), y.size(1),
      plan.View(), grad_y.data_ptr(), F32(grad_w), l.stream()));
}

absl::Status GroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                         const torch::Tensor& c, const Plan& plan,
                         bool trans_b) {
  const Launch l(a, "GroupedGemm");
  if (!l.status().ok()) return l.status();
  absl::StatusOr<cublasHandle_t> h = l.Blas();
  if (!h.ok()) return h.status();
  const int64_t k = a.size(1), n = c.size(1);
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(plan.num_experts), a);
  return l.Done(
      WithFallback(kernels::ChooseGroupedGemmVariant(plan.host_offsets.data(),
                                                     plan.num_experts, k, n),
                   [&](kernels::GroupedGemmVariant v) {
                     return kernels::GroupedGemm(
                         *h, a.data_ptr(), b.data_ptr(), c.data_ptr(),
                         KDType(a), plan.host_offsets.data(), plan.num_experts,
                         k, n, trans_b, v, ws.data_ptr(), l.stream());
                   }));
}

absl::Status GroupedGemmWeightGrad(const torch::Tensor& a,
                                   const torch::Tensor& dc,
                                   const torch::Tensor& db, const Plan& plan) {
  const Launch l(a, "GroupedGemmWeightGrad");
  if (!l.status().ok()) return l.status();
  absl::StatusOr<cublasHandle_t> h = l.Blas();
  if (!h.ok()) return h.status();
  const int64_t k = a.size(1), n = dc.size(1);
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(plan.num_experts), a);
  return l.Done(
      WithFallback(kernels::ChooseGroupedGemmVariant(plan.host_offsets.data(),
                                                     plan.num_experts, k, n),
                   [&](kernels::GroupedGemmVariant v) {
                     return kernels::GroupedGemmWeightGrad(
                         *h, a.data_ptr(), dc.data_ptr(), db.data_ptr(),
                         KDType(a), plan.host_offsets.data(), plan.num_experts,
                         k, n, v, ws.data_ptr(), l.stream());
                   }));
}

#else  // no kernels in this build (SMOE_WITH_CUDA off)

namespace {
absl::Status NoCuda(const char* op) {
  return absl::UnimplementedError(absl::StrCat(
      op,
      ": a CUDA tensor reached the MoE ops, but this build has no CUDA "
      "kernels (needs nvcc and CUDA-enabled LibTorch: docs/gpu-build.md)"));
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
