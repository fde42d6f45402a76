// Copyright 2026 SMoE Lab authors.
//
// Launch dispatch and the CPU side of every launch (launch.h). The only
// device test in worker/model/ops is OnDevice() at the top of each function;
// the device side is launch_cuda.cc.
#include "worker/model/ops/launch.h"

#include <torch/torch.h>

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::model::ops::launch {
namespace {

std::atomic<bool> g_host_through_kernels{false};

// A CUDA tensor, or a CPU one routed through the kernels for a test.
bool OnDevice(const torch::Tensor& t) {
  return t.is_cuda() || g_host_through_kernels.load(std::memory_order_relaxed);
}

absl::Status BadDtype(const char* op, const torch::Tensor& t) {
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": unsupported dtype ", std::string(c10::toString(t.scalar_type())),
      " on ", t.device().str()));
}

bool Is(const torch::Tensor& t, torch::ScalarType s) {
  return t.scalar_type() == s;
}

template <typename T>
T* P(const torch::Tensor& t) {
  return t.data_ptr<T>();
}

int32_t* I32(const torch::Tensor& t) { return t.data_ptr<int32_t>(); }

// bf16 on the CPU: the float32 reference on upcast inputs, outputs rounded
// once at the store (the GPU kernels' numerics).
torch::Tensor Up(const torch::Tensor& t) {
  return t.to(torch::kFloat32).contiguous();
}
torch::Tensor F32Like(const torch::Tensor& t) {
  return torch::empty(t.sizes(), t.options().dtype(torch::kFloat32));
}

// ---- CPU ------------------------------------------------------------------

absl::Status HostRouterTopK(const torch::Tensor& logits, int k,
                            kernels::RouterGating g, const torch::Tensor& idx,
                            const torch::Tensor& w, const torch::Tensor& counts,
                            const torch::Tensor& offsets) {
  const int64_t n = logits.size(0);
  const int e = static_cast<int>(logits.size(1));
  if (Is(logits, torch::kFloat32)) {
    kernels::RouterTopKRef(P<float>(logits), n, e, k, g, I32(idx), P<float>(w),
                           I32(counts), I32(offsets));
  } else if (Is(logits, torch::kFloat64)) {
    kernels::RouterTopKRef(P<double>(logits), n, e, k, g, I32(idx),
                           P<double>(w), I32(counts), I32(offsets));
  } else {
    return BadDtype("RouterTopK", logits);
  }
  return absl::OkStatus();
}

absl::Status HostRouterTopKBackward(const torch::Tensor& logits,
                                    const torch::Tensor& idx,
                                    const torch::Tensor& w,
                                    const torch::Tensor& g,
                                    kernels::RouterGating gating,
                                    const torch::Tensor& gl) {
  const int64_t n = logits.size(0);
  const int e = static_cast<int>(logits.size(1));
  const int k = static_cast<int>(idx.size(1));
  if (Is(logits, torch::kFloat32)) {
    kernels::RouterTopKBackwardRef(P<float>(logits), I32(idx), P<float>(w),
                                   P<float>(g), n, e, k, gating, P<float>(gl));
  } else if (Is(logits, torch::kFloat64)) {
    kernels::RouterTopKBackwardRef(P<double>(logits), I32(idx), P<double>(w),
                                   P<double>(g), n, e, k, gating,
                                   P<double>(gl));
  } else {
    return BadDtype("RouterTopKBackward", logits);
  }
  return absl::OkStatus();
}

absl::Status HostPermute(const torch::Tensor& x, const Plan& plan,
                         const torch::Tensor& out) {
  const int64_t d = x.size(1);
  if (Is(x, torch::kFloat32)) {
    kernels::PermuteRef(P<float>(x), d, plan.View(), P<float>(out));
  } else if (Is(x, torch::kFloat64)) {
    kernels::PermuteRef(P<double>(x), d, plan.View(), P<double>(out));
  } else if (Is(x, torch::kBFloat16)) {
    torch::Tensor o = F32Like(out);
    kernels::PermuteRef(P<float>(Up(x)), d, plan.View(), P<float>(o));
    out.copy_(o);
  } else {
    return BadDtype("Permute", x);
  }
  return absl::OkStatus();
}

absl::Status HostPermuteBackward(const torch::Tensor& g, const Plan& plan,
                                 const torch::Tensor& gx) {
  const int64_t d = g.size(1);
  if (Is(g, torch::kFloat32)) {
    kernels::PermuteBackwardRef(P<float>(g), d, plan.View(), P<float>(gx));
  } else if (Is(g, torch::kFloat64)) {
    kernels::PermuteBackwardRef(P<double>(g), d, plan.View(), P<double>(gx));
  } else if (Is(g, torch::kBFloat16)) {
    torch::Tensor o = F32Like(gx);
    kernels::PermuteBackwardRef(P<float>(Up(g)), d, plan.View(), P<float>(o));
    gx.copy_(o);
  } else {
    return BadDtype("PermuteBackward", g);
  }
  return absl::OkStatus();
}

absl::Status HostCombine(const torch::Tensor& y, const torch::Tensor& w,
                         const Plan& plan, const torch::Tensor& out) {
  const int64_t d = y.size(1);
  if (Is(y, torch::kFloat64) && Is(w, torch::kFloat64)) {
    kernels::CombineRef(P<double>(y), P<double>(w), d, plan.View(),
                        P<double>(out));
  } else if (Is(y, torch::kFloat32) && Is(w, torch::kFloat32)) {
    kernels::CombineRef(P<float>(y), P<float>(w), d, plan.View(),
                        P<float>(out));
  } else if (Is(y, torch::kBFloat16) && Is(w, torch::kFloat32)) {
    torch::Tensor o = F32Like(out);
    kernels::CombineRef(P<float>(Up(y)), P<float>(w), d, plan.View(),
                        P<float>(o));
    out.copy_(o);
  } else {
    return BadDtype("Combine", y);
  }
  return absl::OkStatus();
}

absl::Status HostCombineBackward(const torch::Tensor& g, const torch::Tensor& y,
                                 const torch::Tensor& w, const Plan& plan,
                                 const torch::Tensor& gy,
                                 const torch::Tensor& gw) {
  const int64_t d = y.size(1);
  if (Is(y, torch::kFloat64) && Is(w, torch::kFloat64)) {
    kernels::CombineBackwardRef(P<double>(g), P<double>(y), P<double>(w), d,
                                plan.View(), P<double>(gy), P<double>(gw));
  } else if (Is(y, torch::kFloat32) && Is(w, torch::kFloat32)) {
    kernels::CombineBackwardRef(P<float>(g), P<float>(y), P<float>(w), d,
                                plan.View(), P<float>(gy), P<float>(gw));
  } else if (Is(y, torch::kBFloat16) && Is(w, torch::kFloat32)) {
    torch::Tensor o = F32Like(gy);
    kernels::CombineBackwardRef(P<float>(Up(g)), P<float>(Up(y)), P<float>(w),
                                d, plan.View(), P<float>(o), P<float>(gw));
    gy.copy_(o);
  } else {
    return BadDtype("CombineBackward", y);
  }
  return absl::OkStatus();
}

absl::Status HostGroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                             const torch::Tensor& c, const Plan& plan,
                             bool trans_b) {
  for (int e = 0; e < plan.num_experts; ++e) {
    const int64_t lo = plan.host_offsets[e];
    const int64_t rows = plan.host_offsets[e + 1] - lo;
    if (rows == 0) continue;
    torch::Tensor o = c.narrow(0, lo, rows);
    torch::mm_out(o, a.narrow(0, lo, rows), trans_b ? b[e].t() : b[e]);
  }
  return absl::OkStatus();
}

absl::Status HostGroupedGemmWeightGrad(const torch::Tensor& a,
                                       const torch::Tensor& dc,
                                       const torch::Tensor& db,
                                       const Plan& plan) {
  db.zero_();
  for (int e = 0; e < plan.num_experts; ++e) {
    const int64_t lo = plan.host_offsets[e];
    const int64_t rows = plan.host_offsets[e + 1] - lo;
    if (rows == 0) continue;
    torch::Tensor o = db[e];
    torch::mm_out(o, a.narrow(0, lo, rows).t(), dc.narrow(0, lo, rows));
  }
  return absl::OkStatus();
}

}  // namespace

// ---- Dispatch: the one device test per launch ------------------------------

bool HostTensorsThroughKernels() {
  return g_host_through_kernels.load(std::memory_order_relaxed);
}

absl::Status SetHostTensorsThroughKernelsForTesting(bool on, bool* was) {
#if defined(SMOE_WITH_CUDA)
  const bool before = g_host_through_kernels.exchange(on);
  if (was != nullptr) *was = before;
  return absl::OkStatus();
#else
  (void)on;
  (void)was;
  return absl::UnimplementedError(
      "SetHostTensorsThroughKernelsForTesting: this build has no kernels "
      "(SMOE_WITH_CUDA off: nvcc was not found at configure time)");
#endif
}

absl::Status RouterTopK(const torch::Tensor& logits, int top_k,
                        kernels::RouterGating gating, const torch::Tensor& idx,
                        const torch::Tensor& w, const torch::Tensor& counts,
                        const torch::Tensor& offsets) {
  if (OnDevice(logits)) {
    return cuda::RouterTopK(logits, top_k, gating, idx, w, counts, offsets);
  }
  return HostRouterTopK(logits, top_k, gating, idx, w, counts, offsets);
}

absl::Status RouterTopKBackward(const torch::Tensor& logits,
                                const torch::Tensor& idx,
                                const torch::Tensor& w, const torch::Tensor& g,
                                kernels::RouterGating gating,
                                const torch::Tensor& grad_logits) {
  if (OnDevice(logits)) {
    return cuda::RouterTopKBackward(logits, idx, w, g, gating, grad_logits);
  }
  return HostRouterTopKBackward(logits, idx, w, g, gating, grad_logits);
}

absl::Status BuildPlan(const torch::Tensor& idx, const Plan& plan,
                       const torch::Tensor& counts) {
  if (OnDevice(idx)) return cuda::BuildPlan(idx, plan, counts);
  kernels::BuildPermutePlanRef(I32(idx), plan.View());
  return absl::OkStatus();
}

absl::Status Permute(const torch::Tensor& x, const Plan& plan,
                     const torch::Tensor& permuted) {
  if (OnDevice(x)) return cuda::Permute(x, plan, permuted);
  return HostPermute(x, plan, permuted);
}

absl::Status PermuteBackward(const torch::Tensor& grad_permuted,
                             const Plan& plan, const torch::Tensor& grad_x) {
  if (OnDevice(grad_permuted)) {
    return cuda::PermuteBackward(grad_permuted, plan, grad_x);
  }
  return HostPermuteBackward(grad_permuted, plan, grad_x);
}

absl::Status Combine(const torch::Tensor& y, const torch::Tensor& w,
                     const Plan& plan, const torch::Tensor& out) {
  if (OnDevice(y)) return cuda::Combine(y, w, plan, out);
  return HostCombine(y, w, plan, out);
}

absl::Status CombineBackward(const torch::Tensor& grad_out,
                             const torch::Tensor& y, const torch::Tensor& w,
                             const Plan& plan, const torch::Tensor& grad_y,
                             const torch::Tensor& grad_w) {
  if (OnDevice(y)) {
    return cuda::CombineBackward(grad_out, y, w, plan, grad_y, grad_w);
  }
  return HostCombineBackward(grad_out, y, w, plan, grad_y, grad_w);
}

absl::Status GroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                         const torch::Tensor& c, const Plan& plan,
                         bool trans_b) {
  if (OnDevice(a)) return cuda::GroupedGemm(a, b, c, plan, trans_b);
  return HostGroupedGemm(a, b, c, plan, trans_b);
}

absl::Status GroupedGemmWeightGrad(const torch::Tensor& a,
                                   const torch::Tensor& dc,
                                   const torch::Tensor& db, const Plan& plan) {
  if (OnDevice(a)) return cuda::GroupedGemmWeightGrad(a, dc, db, plan);
  return HostGroupedGemmWeightGrad(a, dc, db, plan);
}

}  // namespace smoe::model::ops::launch
