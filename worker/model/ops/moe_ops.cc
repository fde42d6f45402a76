// Copyright 2026 SMoE Lab authors.
//
// Autograd functions over kernels/ (moe_ops.h). Three backends per op: the
// CUDA kernels (SMOE_WITH_TORCH_CUDA builds, CUDA float32/bf16 tensors), the
// CPU references (CPU float32) and a generic torch-op formulation of the same
// contract (every other dtype/device; float64 tests).
#include "worker/model/ops/moe_ops.h"

#include <torch/torch.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kernels/grouped_gemm/grouped_gemm.h"

#if defined(SMOE_WITH_TORCH_CUDA) && defined(SMOE_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#define SMOE_OPS_CUDA 1
#endif

namespace smoe::model::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string Shape(at::IntArrayRef sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}
std::string Shape(const torch::Tensor& t) { return Shape(t.sizes()); }

// NOTE: c10::Error is the only way out of an autograd backward.
void CheckOk(const absl::Status& s) { TORCH_CHECK(s.ok(), s.ToString()); }

bool IsCpuF32(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat32;
}

#if SMOE_OPS_CUDA
bool OnKernels(const torch::Tensor& t, bool allow_bf16) {
  return t.is_cuda() && (t.scalar_type() == torch::kFloat32 ||
                         (allow_bf16 && t.scalar_type() == torch::kBFloat16));
}
cudaStream_t Stream(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
kernels::DType KDType(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? kernels::DType::kBFloat16
                                             : kernels::DType::kFloat32;
}
torch::Tensor Workspace(size_t bytes, const torch::Tensor& like) {
  return torch::empty({static_cast<int64_t>(bytes) + 16},
                      like.options().dtype(torch::kUInt8));
}
#else
bool OnKernels(const torch::Tensor&, bool) { return false; }
#endif

float* F32(const torch::Tensor& t) { return t.data_ptr<float>(); }
int32_t* I32(const torch::Tensor& t) { return t.data_ptr<int32_t>(); }

// Plan <-> autograd context (the plan's tensors are not differentiable).
void SavePlan(AutogradContext* ctx, const Plan& plan) {
  ctx->saved_data["sorted_idx"] = plan.sorted_idx;
  ctx->saved_data["dest_idx"] = plan.dest_idx;
  ctx->saved_data["expert_offsets"] = plan.expert_offsets;
  ctx->saved_data["host_offsets"] = plan.host_offsets;
  ctx->saved_data["num_tokens"] = plan.num_tokens;
  ctx->saved_data["top_k"] = static_cast<int64_t>(plan.top_k);
  ctx->saved_data["num_experts"] = static_cast<int64_t>(plan.num_experts);
}

Plan LoadPlan(AutogradContext* ctx) {
  Plan p;
  p.sorted_idx = ctx->saved_data["sorted_idx"].toTensor();
  p.dest_idx = ctx->saved_data["dest_idx"].toTensor();
  p.expert_offsets = ctx->saved_data["expert_offsets"].toTensor();
  p.host_offsets = ctx->saved_data["host_offsets"].toIntVector();
  p.num_tokens = ctx->saved_data["num_tokens"].toInt();
  p.top_k = static_cast<int>(ctx->saved_data["top_k"].toInt());
  p.num_experts = static_cast<int>(ctx->saved_data["num_experts"].toInt());
  return p;
}

torch::Tensor Long(const torch::Tensor& t) { return t.to(torch::kInt64); }

// Buffer row -> token (generic path).
torch::Tensor TokenOfRow(const Plan& p) {
  return torch::div(Long(p.sorted_idx), p.top_k, "floor");
}

#if SMOE_OPS_CUDA
// Buffer row -> expert (CUDA bias add and bias grad).
torch::Tensor ExpertOfRow(const Plan& p, const torch::TensorOptions& o) {
  torch::Tensor counts =
      torch::from_blob(const_cast<int64_t*>(p.host_offsets.data()),
                       {p.num_experts + 1}, torch::kInt64)
          .diff();
  return torch::repeat_interleave(
      torch::arange(p.num_experts, o.dtype(torch::kInt64)),
      counts.to(o.device()), p.num_rows());
}
#endif

// ---- Router -----------------------------------------------------------------

class RouterTopKFn : public torch::autograd::Function<RouterTopKFn> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor logits,
                               int64_t top_k, int64_t gating_int) {
    const auto gating = static_cast<kernels::RouterGating>(gating_int);
    logits = logits.contiguous();
    const int64_t n = logits.size(0);
    const int e = static_cast<int>(logits.size(1));
    const int k = static_cast<int>(top_k);
    auto i32 = logits.options().dtype(torch::kInt32);
    torch::Tensor w, idx, counts, offsets;
    if (OnKernels(logits, /*allow_bf16=*/false)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(logits.device());
      w = torch::empty({n, k}, logits.options());
      idx = torch::empty({n, k}, i32);
      counts = torch::empty({e}, i32);
      offsets = torch::empty({e + 1}, i32);
      CheckOk(kernels::RouterTopK(F32(logits), n, e, k, gating, I32(idx),
                                  F32(w), I32(counts), I32(offsets),
                                  Stream(logits)));
#endif
    } else if (IsCpuF32(logits)) {
      w = torch::empty({n, k}, logits.options());
      idx = torch::empty({n, k}, i32);
      counts = torch::empty({e}, i32);
      offsets = torch::empty({e + 1}, i32);
      kernels::RouterTopKRef(F32(logits), n, e, k, gating, I32(idx), F32(w),
                             I32(counts), I32(offsets));
    } else {
      torch::Tensor order = std::get<1>(
          logits.sort(/*stable=*/true, /*dim=*/-1, /*descending=*/true));
      torch::Tensor sel = order.narrow(1, 0, k);
      w = gating == kernels::RouterGating::kRenormalized
              ? torch::softmax(logits.gather(1, sel), -1)
              : torch::softmax(logits, -1).gather(1, sel);
      idx = sel.to(torch::kInt32);
      torch::Tensor c = torch::bincount(sel.reshape({-1}), {}, e);
      counts = c.to(torch::kInt32);
      offsets = torch::cat({torch::zeros({1}, c.options()), c.cumsum(0)})
                    .to(torch::kInt32);
    }
    ctx->save_for_backward({logits, idx, w});
    ctx->saved_data["gating"] = gating_int;
    ctx->mark_non_differentiable({idx, counts, offsets});
    return {w, idx, counts, offsets};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& logits = saved[0];
    const torch::Tensor& idx = saved[1];
    const torch::Tensor& w = saved[2];
    const auto gating =
        static_cast<kernels::RouterGating>(ctx->saved_data["gating"].toInt());
    torch::Tensor g = grads[0].contiguous();
    const int64_t n = logits.size(0);
    const int e = static_cast<int>(logits.size(1));
    const int k = static_cast<int>(idx.size(1));
    torch::Tensor gl;
    if (OnKernels(logits, false)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(logits.device());
      gl = torch::empty_like(logits);
      CheckOk(kernels::RouterTopKBackward(F32(logits), I32(idx), F32(w), F32(g),
                                          n, e, k, gating, F32(gl),
                                          Stream(logits)));
#endif
    } else if (IsCpuF32(logits)) {
      gl = torch::empty_like(logits);
      kernels::RouterTopKBackwardRef(F32(logits), I32(idx), F32(w), F32(g), n,
                                     e, k, gating, F32(gl));
    } else {
      torch::Tensor sel = Long(idx);
      torch::Tensor s = (w * g).sum(1, /*keepdim=*/true);
      if (gating == kernels::RouterGating::kRenormalized) {
        gl = torch::zeros_like(logits).scatter(1, sel, w * (g - s));
      } else {
        torch::Tensor big = torch::zeros_like(logits).scatter(1, sel, g);
        gl = torch::softmax(logits, -1) * (big - s);
      }
    }
    return {gl, torch::Tensor(), torch::Tensor()};
  }
};

// ---- Permute ----------------------------------------------------------------

class PermuteFn : public torch::autograd::Function<PermuteFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               const Plan& plan) {
    x = x.contiguous();
    const int64_t d = x.size(1);
    torch::Tensor out;
    if (OnKernels(x, /*allow_bf16=*/true)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(x.device());
      out = torch::empty({plan.num_rows(), d}, x.options());
      CheckOk(kernels::Permute(x.data_ptr(), KDType(x), d, plan.View(),
                               out.data_ptr(), Stream(x)));
#endif
    } else if (IsCpuF32(x)) {
      out = torch::empty({plan.num_rows(), d}, x.options());
      kernels::PermuteRef(F32(x), d, plan.View(), F32(out));
    } else {
      out = x.index_select(0, TokenOfRow(plan));
    }
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Plan plan = LoadPlan(ctx);
    torch::Tensor g = grads[0].contiguous();
    const int64_t d = g.size(1);
    torch::Tensor gx;
    if (OnKernels(g, true)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(g.device());
      gx = torch::empty({plan.num_tokens, d}, g.options());
      CheckOk(kernels::PermuteBackward(g.data_ptr(), KDType(g), d, plan.View(),
                                       gx.data_ptr(), Stream(g)));
#endif
    } else if (IsCpuF32(g)) {
      gx = torch::empty({plan.num_tokens, d}, g.options());
      kernels::PermuteBackwardRef(F32(g), d, plan.View(), F32(gx));
    } else {
      gx = g.index_select(0, Long(plan.dest_idx))
               .view({plan.num_tokens, plan.top_k, d})
               .sum(1);
    }
    return {gx, torch::Tensor()};
  }
};

// ---- Combine ----------------------------------------------------------------

class CombineFn : public torch::autograd::Function<CombineFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor expert_out,
                               torch::Tensor w, const Plan& plan) {
    expert_out = expert_out.contiguous();
    w = w.contiguous();
    const int64_t d = expert_out.size(1);
    torch::Tensor out;
    if (OnKernels(expert_out, true) && w.scalar_type() == torch::kFloat32) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(expert_out.device());
      out = torch::empty({plan.num_tokens, d}, expert_out.options());
      CheckOk(kernels::Combine(expert_out.data_ptr(), F32(w),
                               KDType(expert_out), d, plan.View(),
                               out.data_ptr(), Stream(expert_out)));
#endif
    } else if (IsCpuF32(expert_out)) {
      out = torch::empty({plan.num_tokens, d}, expert_out.options());
      kernels::CombineRef(F32(expert_out), F32(w), d, plan.View(), F32(out));
    } else {
      out = (expert_out.index_select(0, Long(plan.dest_idx))
                 .view({plan.num_tokens, plan.top_k, d}) *
             w.unsqueeze(-1).to(expert_out.scalar_type()))
                .sum(1);
    }
    ctx->save_for_backward({expert_out, w});
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Plan plan = LoadPlan(ctx);
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& y = saved[0];
    const torch::Tensor& w = saved[1];
    torch::Tensor g = grads[0].contiguous();
    const int64_t d = y.size(1);
    torch::Tensor gy, gw;
    if (OnKernels(y, true) && w.scalar_type() == torch::kFloat32) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(y.device());
      gy = torch::empty_like(y);
      gw = torch::empty_like(w);
      CheckOk(kernels::CombineBackward(g.data_ptr(), y.data_ptr(), F32(w),
                                       KDType(y), d, plan.View(), gy.data_ptr(),
                                       F32(gw), Stream(y)));
#endif
    } else if (IsCpuF32(y)) {
      gy = torch::empty_like(y);
      gw = torch::empty_like(w);
      kernels::CombineBackwardRef(F32(g), F32(y), F32(w), d, plan.View(),
                                  F32(gy), F32(gw));
    } else {
      // Pair f = t * k + j reads grad_out[t].
      torch::Tensor g_pair = g.unsqueeze(1)
                                 .expand({plan.num_tokens, plan.top_k, d})
                                 .reshape({plan.num_rows(), d});
      torch::Tensor w_pair = w.reshape({plan.num_rows(), 1}).to(g.dtype());
      gy = (w_pair * g_pair).index_select(0, Long(plan.sorted_idx));
      gw = (g_pair * y.index_select(0, Long(plan.dest_idx)))
               .sum(1)
               .view_as(w)
               .to(w.scalar_type());
    }
    return {gy, gw, torch::Tensor()};
  }
};

// ---- Grouped linear ---------------------------------------------------------

#if SMOE_OPS_CUDA
// One grouped GEMM, falling back to the per-expert loop when this cuBLAS has
// no grouped mode (older than 12.5) or none for the dtype
// (kernels::GroupedGemmFallbackVariant).
absl::Status CudaGemm(const torch::Tensor& a, const torch::Tensor& b,
                      torch::Tensor& c, const Plan& p, int64_t k, int64_t n,
                      bool trans_b) {
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(p.num_experts), a);
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  absl::Status s = kernels::GroupedGemm(
      h, a.data_ptr(), b.data_ptr(), c.data_ptr(), KDType(a),
      p.host_offsets.data(), p.num_experts, k, n, trans_b,
      kernels::GroupedGemmVariant::kGroupedBatched, ws.data_ptr(), Stream(a));
  if (const std::optional<kernels::GroupedGemmVariant> v =
          kernels::GroupedGemmFallbackVariant(
              kernels::GroupedGemmVariant::kGroupedBatched, s)) {
    s = kernels::GroupedGemm(h, a.data_ptr(), b.data_ptr(), c.data_ptr(),
                             KDType(a), p.host_offsets.data(), p.num_experts, k,
                             n, trans_b, *v, ws.data_ptr(), Stream(a));
  }
  return s;
}

absl::Status CudaWeightGrad(const torch::Tensor& a, const torch::Tensor& dc,
                            torch::Tensor& db, const Plan& p, int64_t k,
                            int64_t n) {
  torch::Tensor ws =
      Workspace(kernels::GroupedGemmWorkspaceBytes(p.num_experts), a);
  cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
  absl::Status s = kernels::GroupedGemmWeightGrad(
      h, a.data_ptr(), dc.data_ptr(), db.data_ptr(), KDType(a),
      p.host_offsets.data(), p.num_experts, k, n,
      kernels::GroupedGemmVariant::kGroupedBatched, ws.data_ptr(), Stream(a));
  if (const std::optional<kernels::GroupedGemmVariant> v =
          kernels::GroupedGemmFallbackVariant(
              kernels::GroupedGemmVariant::kGroupedBatched, s)) {
    s = kernels::GroupedGemmWeightGrad(h, a.data_ptr(), dc.data_ptr(),
                                       db.data_ptr(), KDType(a),
                                       p.host_offsets.data(), p.num_experts, k,
                                       n, *v, ws.data_ptr(), Stream(a));
  }
  return s;
}
#endif

class GroupedLinearFn : public torch::autograd::Function<GroupedLinearFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a,
                               torch::Tensor w, torch::Tensor b,
                               const Plan& plan) {
    a = a.contiguous();
    w = w.contiguous();
    [[maybe_unused]] const int64_t k = w.size(1);
    const int64_t n = w.size(2);
    torch::Tensor out;
    if (OnKernels(a, true)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(a.device());
      out = torch::empty({plan.num_rows(), n}, a.options());
      CheckOk(CudaGemm(a, w, out, plan, k, n, /*trans_b=*/false));
      out.add_(b.index_select(0, ExpertOfRow(plan, a.options())));
#endif
    } else {
      // NOTE: mm then add, exactly Expert()'s matmul(x, w[e]) + b[e].
      out = torch::empty({plan.num_rows(), n}, a.options());
      for (int e = 0; e < plan.num_experts; ++e) {
        const int64_t lo = plan.host_offsets[e];
        const int64_t rows = plan.host_offsets[e + 1] - lo;
        if (rows == 0) continue;
        torch::Tensor o = out.narrow(0, lo, rows);
        torch::mm_out(o, a.narrow(0, lo, rows), w[e]);
        o.add_(b[e]);
      }
    }
    ctx->save_for_backward({a, w});
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Plan plan = LoadPlan(ctx);
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& a = saved[0];
    const torch::Tensor& w = saved[1];
    torch::Tensor g = grads[0].contiguous();
    [[maybe_unused]] const int64_t k = w.size(1);
    const int64_t n = w.size(2);
    torch::Tensor ga, gw, gb;
    const bool need_a = ctx->needs_input_grad(0);
    const bool need_w = ctx->needs_input_grad(1);
    const bool need_b = ctx->needs_input_grad(2);
    if (OnKernels(a, true)) {
#if SMOE_OPS_CUDA
      c10::cuda::CUDAGuard guard(a.device());
      if (need_a) {
        ga = torch::empty_like(a);
        CheckOk(CudaGemm(g, w, ga, plan, n, k, /*trans_b=*/true));
      }
      if (need_w) {
        gw = torch::empty_like(w);
        CheckOk(CudaWeightGrad(a, g, gw, plan, k, n));
      }
      if (need_b) {
        gb = torch::zeros({plan.num_experts, n}, g.options())
                 .index_add_(0, ExpertOfRow(plan, g.options()), g);
      }
#endif
    } else {
      if (need_a) ga = torch::empty_like(a);
      if (need_w) gw = torch::zeros_like(w);
      if (need_b) gb = torch::zeros({plan.num_experts, n}, g.options());
      for (int e = 0; e < plan.num_experts; ++e) {
        const int64_t lo = plan.host_offsets[e];
        const int64_t rows = plan.host_offsets[e + 1] - lo;
        if (rows == 0) continue;
        torch::Tensor ge = g.narrow(0, lo, rows);
        if (need_a) {
          torch::Tensor o = ga.narrow(0, lo, rows);
          torch::mm_out(o, ge, w[e].t());
        }
        if (need_w) {
          torch::Tensor o = gw[e];
          torch::mm_out(o, a.narrow(0, lo, rows).t(), ge);
        }
        if (need_b) gb[e].copy_(ge.sum(0));
      }
    }
    return {ga, gw, gb, torch::Tensor()};
  }
};

absl::Status CheckFloating(const torch::Tensor& t, const char* name) {
  if (!t.defined() || !t.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be a floating-point tensor, got ",
                     t.defined() ? std::string(c10::toString(t.scalar_type()))
                                 : std::string("undefined")));
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const torch::Tensor& t, const char* name,
                        std::vector<int64_t> want) {
  if (t.sizes() != at::IntArrayRef(want)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must have shape ", Shape(want), ", got ", Shape(t)));
  }
  return absl::OkStatus();
}

absl::Status CheckDevice(const torch::Tensor& t, const char* name,
                         const torch::Device& want) {
  if (t.device() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " is on ", t.device().str(), ", expected ", want.str()));
  }
  return absl::OkStatus();
}

}  // namespace

bool KernelsOnCuda() {
#if SMOE_OPS_CUDA
  return true;
#else
  return false;
#endif
}

kernels::PermutePlan Plan::View() const {
  kernels::PermutePlan v;
  v.sorted_idx = sorted_idx.data_ptr<int32_t>();
  v.dest_idx = dest_idx.data_ptr<int32_t>();
  v.expert_offsets = expert_offsets.data_ptr<int32_t>();
  v.num_tokens = num_tokens;
  v.top_k = top_k;
  v.num_experts = num_experts;
  return v;
}

absl::StatusOr<RouterOutput> RouterTopK(const torch::Tensor& logits, int top_k,
                                        kernels::RouterGating gating) {
  SMOE_RETURN_IF_ERROR(CheckFloating(logits, "logits"));
  if (logits.dim() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "logits must be [num_tokens, num_experts], got ", Shape(logits)));
  }
  SMOE_RETURN_IF_ERROR(kernels::ValidateRouterArgs(
      logits.size(0), static_cast<int>(logits.size(1)), top_k,
      OnKernels(logits, false)));
  variable_list out = RouterTopKFn::apply(logits, static_cast<int64_t>(top_k),
                                          static_cast<int64_t>(gating));
  return RouterOutput{out[0], out[1], out[2], out[3]};
}

absl::StatusOr<Plan> BuildPermutePlan(const torch::Tensor& topk_idx,
                                      int num_experts) {
  if (topk_idx.dim() != 2 || (topk_idx.scalar_type() != torch::kInt32 &&
                              topk_idx.scalar_type() != torch::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topk_idx must be [num_tokens, top_k] int32 or int64, got ",
        Shape(topk_idx), " ",
        std::string(c10::toString(topk_idx.scalar_type()))));
  }
  Plan p;
  p.num_tokens = topk_idx.size(0);
  p.top_k = static_cast<int>(topk_idx.size(1));
  p.num_experts = num_experts;
  const bool gpu = KernelsOnCuda() && topk_idx.is_cuda();
  SMOE_RETURN_IF_ERROR(kernels::ValidatePermuteArgs(
      p.num_tokens, num_experts, p.top_k, /*hidden=*/1, gpu));
  torch::Tensor idx = topk_idx.to(torch::kInt32).contiguous();
  auto i32 = idx.options();
  p.sorted_idx = torch::empty({p.num_rows()}, i32);
  p.dest_idx = torch::empty({p.num_rows()}, i32);
  p.expert_offsets = torch::empty({num_experts + 1}, i32);
  torch::Tensor host_offsets;
  if (gpu) {
#if SMOE_OPS_CUDA
    // NOTE: the GPU builder skips out-of-range entries; check them first
    // (one small device reduction; the router never produces them).
    if (idx.numel() > 0 && (idx.min().item<int32_t>() < 0 ||
                            idx.max().item<int32_t>() >= num_experts)) {
      torch::Tensor h = idx.cpu();
      SMOE_RETURN_IF_ERROR(kernels::ValidateTopkIdx(
          h.data_ptr<int32_t>(), p.num_tokens, p.top_k, num_experts));
    }
    c10::cuda::CUDAGuard guard(idx.device());
    torch::Tensor counts = torch::empty({num_experts}, i32);
    torch::Tensor ws = Workspace(
        kernels::PermutePlanWorkspaceBytes(p.num_tokens, p.top_k, num_experts),
        idx);
    SMOE_RETURN_IF_ERROR(kernels::BuildPermutePlan(
        I32(idx), p.View(), I32(counts), ws.data_ptr(), Stream(idx)));
    host_offsets = p.expert_offsets.to(torch::kCPU);  // synchronises
#endif
  } else {
    torch::Tensor h = idx.cpu();
    SMOE_RETURN_IF_ERROR(kernels::ValidateTopkIdx(
        h.data_ptr<int32_t>(), p.num_tokens, p.top_k, num_experts));
    if (idx.is_cuda()) {
      // CUDA tensors without the kernels: build on the host, then copy.
      Plan hp = p;
      hp.sorted_idx = torch::empty({p.num_rows()}, torch::kInt32);
      hp.dest_idx = torch::empty({p.num_rows()}, torch::kInt32);
      hp.expert_offsets = torch::empty({num_experts + 1}, torch::kInt32);
      kernels::BuildPermutePlanRef(h.data_ptr<int32_t>(), hp.View());
      p.sorted_idx = hp.sorted_idx.to(idx.device());
      p.dest_idx = hp.dest_idx.to(idx.device());
      p.expert_offsets = hp.expert_offsets.to(idx.device());
      host_offsets = hp.expert_offsets;
    } else {
      kernels::BuildPermutePlanRef(I32(idx), p.View());
      host_offsets = p.expert_offsets;
    }
  }
  const int32_t* ho = host_offsets.data_ptr<int32_t>();
  p.host_offsets.assign(ho, ho + num_experts + 1);
  return p;
}

absl::StatusOr<torch::Tensor> Permute(const torch::Tensor& x,
                                      const Plan& plan) {
  SMOE_RETURN_IF_ERROR(CheckFloating(x, "x"));
  if (x.dim() != 2 || x.size(0) != plan.num_tokens || x.size(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must be [num_tokens=", plan.num_tokens,
                     ", hidden], got ", Shape(x)));
  }
  SMOE_RETURN_IF_ERROR(CheckDevice(x, "x", plan.sorted_idx.device()));
  return PermuteFn::apply(x, plan);
}

absl::StatusOr<torch::Tensor> Combine(const torch::Tensor& expert_out,
                                      const torch::Tensor& topk_weights,
                                      const Plan& plan) {
  SMOE_RETURN_IF_ERROR(CheckFloating(expert_out, "expert_out"));
  SMOE_RETURN_IF_ERROR(CheckFloating(topk_weights, "topk_weights"));
  if (expert_out.dim() != 2 || expert_out.size(0) != plan.num_rows() ||
      expert_out.size(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert_out must be [num_tokens * top_k=", plan.num_rows(),
                     ", hidden], got ", Shape(expert_out)));
  }
  SMOE_RETURN_IF_ERROR(
      CheckShape(topk_weights, "topk_weights", {plan.num_tokens, plan.top_k}));
  SMOE_RETURN_IF_ERROR(
      CheckDevice(expert_out, "expert_out", plan.sorted_idx.device()));
  SMOE_RETURN_IF_ERROR(
      CheckDevice(topk_weights, "topk_weights", plan.sorted_idx.device()));
  if (expert_out.scalar_type() != topk_weights.scalar_type() &&
      topk_weights.scalar_type() != torch::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("topk_weights must be float32 or expert_out's dtype, got ",
                     std::string(c10::toString(topk_weights.scalar_type()))));
  }
  return CombineFn::apply(expert_out, topk_weights, plan);
}

absl::StatusOr<torch::Tensor> GroupedLinear(const torch::Tensor& a,
                                            const torch::Tensor& weight,
                                            const torch::Tensor& bias,
                                            const Plan& plan) {
  SMOE_RETURN_IF_ERROR(CheckFloating(a, "a"));
  if (weight.dim() != 3 || weight.size(0) != plan.num_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("weight must be [num_experts=", plan.num_experts,
                     ", k, n], got ", Shape(weight)));
  }
  SMOE_RETURN_IF_ERROR(CheckShape(a, "a", {plan.num_rows(), weight.size(1)}));
  SMOE_RETURN_IF_ERROR(
      CheckShape(bias, "bias", {plan.num_experts, weight.size(2)}));
  for (const auto& [t, name] :
       {std::pair{&a, "a"}, std::pair{&weight, "weight"},
        std::pair{&bias, "bias"}}) {
    SMOE_RETURN_IF_ERROR(CheckDevice(*t, name, plan.sorted_idx.device()));
    if (t->scalar_type() != a.scalar_type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " has dtype ", std::string(c10::toString(t->scalar_type())),
          ", expected ", std::string(c10::toString(a.scalar_type()))));
    }
  }
  return GroupedLinearFn::apply(a, weight, bias, plan);
}

absl::StatusOr<torch::Tensor> ExpertMlp(const torch::Tensor& buffer,
                                        const torch::Tensor& w1,
                                        const torch::Tensor& b1,
                                        const torch::Tensor& w2,
                                        const torch::Tensor& b2,
                                        const Plan& plan) {
  SMOE_ASSIGN_OR_RETURN(torch::Tensor h, GroupedLinear(buffer, w1, b1, plan));
  return GroupedLinear(torch::gelu(h, "tanh"), w2, b2, plan);
}

absl::StatusOr<torch::Tensor> MoeForward(
    const torch::Tensor& x, const torch::Tensor& logits, int top_k,
    kernels::RouterGating gating, const torch::Tensor& w1,
    const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
    RouterOutput* routing) {
  SMOE_ASSIGN_OR_RETURN(RouterOutput r, RouterTopK(logits, top_k, gating));
  SMOE_ASSIGN_OR_RETURN(
      Plan plan,
      BuildPermutePlan(r.topk_idx, static_cast<int>(logits.size(1))));
  SMOE_ASSIGN_OR_RETURN(torch::Tensor buffer, Permute(x, plan));
  SMOE_ASSIGN_OR_RETURN(torch::Tensor y,
                        ExpertMlp(buffer, w1, b1, w2, b2, plan));
  SMOE_ASSIGN_OR_RETURN(torch::Tensor out, Combine(y, r.topk_weights, plan));
  if (routing != nullptr) *routing = std::move(r);
  return out;
}

}  // namespace smoe::model::ops
