// Copyright 2026 SMoE Lab authors.
//
// Autograd functions over kernels/ (moe_ops.h). One code path for every
// device: validation, allocation, dtypes, the plan and the autograd
// bookkeeping below run the same on CPU and CUDA; only the kernel launches
// differ, and they sit in launch.h (CPU references, launch.cc) and
// launch_cuda.cc (CUDA kernels and cuBLAS).
#include "worker/model/ops/moe_ops.h"

#include <ATen/Parallel.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "kernels/permute/permute.h"
#include "worker/model/autocast.h"
#include "worker/model/fused_cpu_kernels.h"
#include "worker/model/fused_ops.h"
#include "worker/model/ops/launch.h"

namespace smoe::model::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string Shape(at::IntArrayRef sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}
std::string Shape(const torch::Tensor& t) { return Shape(t.sizes()); }
std::string DtypeName(const torch::Tensor& t) {
  return std::string(c10::toString(t.scalar_type()));
}

// NOTE: c10::Error is the only way out of an autograd backward.
void CheckOk(const absl::Status& s) { TORCH_CHECK(s.ok(), s.ToString()); }

// The Functions run on exactly the dtypes they are handed: autocast is off
// inside them (what torch.cuda.amp.custom_fwd does); MoeForward casts the
// expert path to autocast's dtype before it enters them.
struct NoAutocast {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::autocast_dispatch_keyset};
};

torch::Tensor Int32Like(std::vector<int64_t> sizes, const torch::Tensor& t) {
  return torch::empty(sizes, t.options().dtype(torch::kInt32));
}

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

// A gradient that autograd did not materialise (output unused) is zero.
torch::Tensor GradOr0(const torch::Tensor& g, const torch::Tensor& like) {
  return g.defined() ? g.contiguous() : torch::zeros_like(like);
}

// Per-expert bias: out[rows of e] += bias[e]. Rows are contiguous per expert,
// so this is a narrow + add per non-empty expert on any device.
void AddBias(const torch::Tensor& out, const torch::Tensor& bias,
             const Plan& p) {
  for (int e = 0; e < p.num_experts; ++e) {
    const int64_t lo = p.host_offsets[e];
    const int64_t rows = p.host_offsets[e + 1] - lo;
    if (rows > 0) out.narrow(0, lo, rows).add_(bias[e]);
  }
}

// CPU float32/float64: the per-expert loops of fused_cpu_kernels.h (not
// when a test routes CPU tensors through the kernels: launch.h).
bool CpuFloatLoops(const torch::Tensor& t) {
  return t.is_cpu() &&
         (t.scalar_type() == torch::kFloat32 ||
          t.scalar_type() == torch::kFloat64) &&
         !launch::HostTensorsThroughKernels();
}

// o [rows, n] (contiguous CPU float32/float64) = a . w + bias (bias a
// contiguous [n] row): the bias written into every row (one memcpy per
// row), then the GEMM accumulates onto it (in-place addmm_, BLAS beta = 1):
// no zeroing pass (beta = 0), no separate bias add, and not LibTorch's
// slow broadcasting copy inside addmm_out.
void AddmmBiasRows(const torch::Tensor& o, const torch::Tensor& bias,
                   const torch::Tensor& a, const torch::Tensor& w) {
  const int64_t rows = o.size(0), n = o.size(1);
  const size_t bytes = static_cast<size_t>(n) * o.element_size();
  char* op = static_cast<char*>(o.data_ptr());
  const void* bp = bias.data_ptr();
  for (int64_t r = 0; r < rows; ++r) std::memcpy(op + r * bytes, bp, bytes);
  torch::Tensor out = o;
  out.addmm_(a, w);
}

// out[rows of e] = a[rows of e] . w[e] + b[e]. CPU float32/float64: one
// AddmmBiasRows per non-empty expert; elsewhere the grouped GEMM launch,
// then AddBias.
void GroupedGemmBias(const torch::Tensor& a, const torch::Tensor& w,
                     const torch::Tensor& b, const torch::Tensor& out,
                     const Plan& plan) {
  if (!CpuFloatLoops(a)) {
    // NOTE: GEMM then bias add, exactly Expert()'s matmul(x, w[e]) + b[e].
    CheckOk(launch::GroupedGemm(a, w, out, plan, /*trans_b=*/false));
    AddBias(out, b, plan);
    return;
  }
  const torch::Tensor bd = b.detach().contiguous();
  for (int e = 0; e < plan.num_experts; ++e) {
    const int64_t lo = plan.host_offsets[e];
    const int64_t rows = plan.host_offsets[e + 1] - lo;
    if (rows == 0) continue;
    torch::Tensor o = out.narrow(0, lo, rows);
    AddmmBiasRows(o, bd[e], a.narrow(0, lo, rows), w[e]);
  }
}

// Rows per block of the CPU per-expert column sums (bias gradients).
constexpr int64_t kBiasRowBlock = 256;

// {expert, first row, rows} of every block: each expert's rows cut into
// kBiasRowBlock-row blocks (the last one shorter).
std::vector<std::array<int64_t, 3>> ExpertRowBlocks(const Plan& p) {
  std::vector<std::array<int64_t, 3>> blocks;
  for (int e = 0; e < p.num_experts; ++e) {
    for (int64_t lo = p.host_offsets[e]; lo < p.host_offsets[e + 1];
         lo += kBiasRowBlock) {
      blocks.push_back(
          {e, lo, std::min(kBiasRowBlock, p.host_offsets[e + 1] - lo)});
    }
  }
  return blocks;
}

// Runs body(first row, rows, expert, partial) for every block of
// ExpertRowBlocks over the intra-op threads; partial is that block's row
// [n] of column sums (or null when !sums). Returns [E, n]: per expert, its
// blocks' partial sums added in block order (the same result for any
// thread count), or an undefined tensor when !sums.
template <typename scalar_t, typename Body>
torch::Tensor ForExpertRowBlocks(const Plan& p, int64_t n,
                                 const torch::TensorOptions& o, bool sums,
                                 Body body) {
  const std::vector<std::array<int64_t, 3>> blocks = ExpertRowBlocks(p);
  const int64_t nb = static_cast<int64_t>(blocks.size());
  torch::Tensor part = sums ? torch::empty({nb, n}, o) : torch::Tensor();
  scalar_t* pp = sums ? part.data_ptr<scalar_t>() : nullptr;
  at::parallel_for(0, nb, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      body(blocks[k][1], blocks[k][2], blocks[k][0],
           pp != nullptr ? pp + k * n : nullptr);
    }
  });
  if (!sums) return torch::Tensor();
  torch::Tensor gb = torch::zeros({p.num_experts, n}, o);
  scalar_t* g = gb.data_ptr<scalar_t>();
  for (int64_t k = 0; k < nb; ++k) {
    scalar_t* ge = g + blocks[k][0] * n;
    const scalar_t* pk = pp + k * n;
    for (int64_t c = 0; c < n; ++c) ge[c] += pk[c];
  }
  return gb;
}

// grad bias[e] = sum of grad rows of e: a per-expert reduction in at least
// float32 (bf16 grads) in row order, deterministic on every device (no
// atomics, unlike index_add_ on CUDA). CPU float32/64: one pass of
// fixed row blocks (ForExpertRowBlocks).
torch::Tensor BiasGrad(const torch::Tensor& g_in, const Plan& p) {
  if (CpuFloatLoops(g_in)) {
    const torch::Tensor g = g_in.contiguous();
    const int64_t n = g.size(1);
    torch::Tensor gb;
    AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "bias_grad", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      gb = ForExpertRowBlocks<scalar_t>(
          p, n, g.options(), /*sums=*/true,
          [&](int64_t lo, int64_t rows, int64_t, scalar_t* part) {
            model::cpu::ColumnSums(gp + lo * n, part, n, rows);
          });
    });
    return gb;
  }
  const torch::Tensor& g = g_in;
  const auto acc =
      g.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  torch::Tensor gb = torch::zeros({p.num_experts, g.size(1)}, g.options());
  for (int e = 0; e < p.num_experts; ++e) {
    const int64_t lo = p.host_offsets[e];
    const int64_t rows = p.host_offsets[e + 1] - lo;
    if (rows > 0) gb[e].copy_(g.narrow(0, lo, rows).sum({0}, false, acc));
  }
  return gb;
}

// ---- Router -----------------------------------------------------------------

class RouterTopKFn : public torch::autograd::Function<RouterTopKFn> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor logits,
                               int64_t top_k, int64_t gating_int) {
    NoAutocast no_autocast;
    const auto gating = static_cast<kernels::RouterGating>(gating_int);
    logits = logits.contiguous();
    const int64_t n = logits.size(0);
    const int64_t e = logits.size(1);
    torch::Tensor w = torch::empty({n, top_k}, logits.options());
    torch::Tensor idx = Int32Like({n, top_k}, logits);
    torch::Tensor counts = Int32Like({e}, logits);
    torch::Tensor offsets = Int32Like({e + 1}, logits);
    CheckOk(launch::RouterTopK(logits, static_cast<int>(top_k), gating, idx, w,
                               counts, offsets));
    ctx->save_for_backward({logits, idx, w});
    ctx->saved_data["gating"] = gating_int;
    ctx->mark_non_differentiable({idx, counts, offsets});
    return {w, idx, counts, offsets};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    NoAutocast no_autocast;
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& logits = saved[0];
    const torch::Tensor& idx = saved[1];
    const torch::Tensor& w = saved[2];
    const auto gating =
        static_cast<kernels::RouterGating>(ctx->saved_data["gating"].toInt());
    torch::Tensor g = GradOr0(grads[0], w);
    torch::Tensor gl = torch::empty_like(logits);
    CheckOk(launch::RouterTopKBackward(logits, idx, w, g, gating, gl));
    return {gl, torch::Tensor(), torch::Tensor()};
  }
};

// ---- Permute ----------------------------------------------------------------

class PermuteFn : public torch::autograd::Function<PermuteFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               const Plan& plan) {
    NoAutocast no_autocast;
    x = x.contiguous();
    torch::Tensor out = torch::empty({plan.num_rows(), x.size(1)}, x.options());
    CheckOk(launch::Permute(x, plan, out));
    SavePlan(ctx, plan);
    ctx->saved_data["hidden"] = x.size(1);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    NoAutocast no_autocast;
    const Plan plan = LoadPlan(ctx);
    const int64_t d = ctx->saved_data["hidden"].toInt();
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor()};
    torch::Tensor g = grads[0].contiguous();
    torch::Tensor gx = torch::empty({plan.num_tokens, d}, g.options());
    CheckOk(launch::PermuteBackward(g, plan, gx));
    return {gx, torch::Tensor()};
  }
};

// ---- Combine ----------------------------------------------------------------

class CombineFn : public torch::autograd::Function<CombineFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor expert_out,
                               torch::Tensor w, const Plan& plan) {
    NoAutocast no_autocast;
    expert_out = expert_out.contiguous();
    w = w.contiguous();
    torch::Tensor out = torch::empty({plan.num_tokens, expert_out.size(1)},
                                     expert_out.options());
    CheckOk(launch::Combine(expert_out, w, plan, out));
    ctx->save_for_backward({expert_out, w});
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    NoAutocast no_autocast;
    const Plan plan = LoadPlan(ctx);
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& y = saved[0];
    const torch::Tensor& w = saved[1];
    if (!grads[0].defined()) {
      return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    torch::Tensor g = grads[0].contiguous();
    torch::Tensor gy = torch::empty_like(y);
    torch::Tensor gw = torch::empty_like(w);
    CheckOk(launch::CombineBackward(g, y, w, plan, gy, gw));
    return {gy, gw, torch::Tensor()};
  }
};

// ---- Grouped linear ---------------------------------------------------------

class GroupedLinearFn : public torch::autograd::Function<GroupedLinearFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a,
                               torch::Tensor w, torch::Tensor b,
                               const Plan& plan) {
    NoAutocast no_autocast;
    a = a.contiguous();
    w = w.contiguous();
    torch::Tensor out = torch::empty({plan.num_rows(), w.size(2)}, a.options());
    GroupedGemmBias(a, w, b, out, plan);
    ctx->save_for_backward({a, w});
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    NoAutocast no_autocast;
    const Plan plan = LoadPlan(ctx);
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& a = saved[0];
    const torch::Tensor& w = saved[1];
    torch::Tensor ga, gw, gb;
    if (!grads[0].defined()) return {ga, gw, gb, torch::Tensor()};
    torch::Tensor g = grads[0].contiguous();
    if (ctx->needs_input_grad(0)) {
      ga = torch::empty_like(a);
      CheckOk(launch::GroupedGemm(g, w, ga, plan, /*trans_b=*/true));
    }
    if (ctx->needs_input_grad(1)) {
      gw = torch::empty_like(w);
      CheckOk(launch::GroupedGemmWeightGrad(a, g, gw, plan));
    }
    if (ctx->needs_input_grad(2)) gb = BiasGrad(g, plan);
    return {ga, gw, gb, torch::Tensor()};
  }
};

// Runs body(first row, rows, partial) over kBiasRowBlock-row blocks of
// [0, rows) on the intra-op threads; partial is the block's row [n] of
// column sums, or null when out is null. out [n] (written) = the blocks'
// partial sums added in block order: the same for any thread count, and
// the same blocks as ForExpertRowBlocks gives one expert.
template <typename scalar_t, typename Body>
void ForRowBlocks(int64_t rows, int64_t n, scalar_t* out, Body body) {
  const int64_t nb = (rows + kBiasRowBlock - 1) / kBiasRowBlock;
  std::vector<scalar_t> part(out != nullptr ? nb * n : 0);
  at::parallel_for(0, nb, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t lo = k * kBiasRowBlock;
      body(lo, std::min(kBiasRowBlock, rows - lo),
           out != nullptr ? part.data() + k * n : nullptr);
    }
  });
  if (out == nullptr) return;
  for (int64_t c = 0; c < n; ++c) out[c] = scalar_t(0);
  for (int64_t k = 0; k < nb; ++k) {
    for (int64_t c = 0; c < n; ++c) out[c] += part[k * n + c];
  }
}

// The whole expert MLP, GroupedLinear(GELU(GroupedLinear(x, w1, b1)), w2,
// b2), on CPU float32/float64 as one op that runs expert by expert: each
// expert's slice goes through both GEMMs (bias folded into addmm) and the
// GELU while it is in cache, and in the backward through the b2 gradient,
// the w2 weight gradient, the input gradient of the second layer, the GELU
// gradient + b1 gradient (one pass), the w1 weight gradient and the input
// gradient, one expert at a time (the per-expert intermediates of
// [rows_e, mlp] stay in L2/L3 instead of a [N k, mlp] buffer per op). Same
// operations and summation blocks as the unfused ops.
class ExpertMlpFn : public torch::autograd::Function<ExpertMlpFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor w1, torch::Tensor b1,
                               torch::Tensor w2, torch::Tensor b2,
                               const Plan& plan) {
    NoAutocast no_autocast;
    x = x.contiguous();
    w1 = w1.contiguous();
    w2 = w2.contiguous();
    const torch::Tensor b1d = b1.detach().contiguous();
    const torch::Tensor b2d = b2.detach().contiguous();
    const int64_t f = w1.size(2);
    torch::Tensor h = torch::empty({plan.num_rows(), f}, x.options());
    torch::Tensor y = torch::empty_like(h);
    torch::Tensor out =
        torch::empty({plan.num_rows(), w2.size(2)}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "expert_mlp", [&] {
      for (int e = 0; e < plan.num_experts; ++e) {
        const int64_t lo = plan.host_offsets[e];
        const int64_t rows = plan.host_offsets[e + 1] - lo;
        if (rows == 0) continue;
        torch::Tensor he = h.narrow(0, lo, rows);
        torch::Tensor ye = y.narrow(0, lo, rows);
        AddmmBiasRows(he, b1d[e], x.narrow(0, lo, rows), w1[e]);
        const scalar_t* hp = he.data_ptr<scalar_t>();
        scalar_t* yp = ye.data_ptr<scalar_t>();
        at::parallel_for(0, rows * f, 1 << 14, [&](int64_t i0, int64_t i1) {
          model::cpu::GeluTanhRange(hp + i0, yp + i0, i1 - i0);
        });
        torch::Tensor oe = out.narrow(0, lo, rows);
        AddmmBiasRows(oe, b2d[e], ye, w2[e]);
      }
    });
    ctx->save_for_backward({x, w1, w2, h, y});
    SavePlan(ctx, plan);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    NoAutocast no_autocast;
    const Plan plan = LoadPlan(ctx);
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w1 = saved[1];
    const torch::Tensor& w2 = saved[2];
    const torch::Tensor& h = saved[3];
    const torch::Tensor& y = saved[4];
    torch::Tensor gx, gw1, gb1, gw2, gb2;
    if (!grads[0].defined()) return {gx, gw1, gb1, gw2, gb2, torch::Tensor()};
    const torch::Tensor g = grads[0].contiguous();
    const int64_t f = w1.size(2), dm = w2.size(2);
    const auto o = x.options();
    if (ctx->needs_input_grad(0)) gx = torch::empty_like(x);
    // Experts without rows get zero weight and bias gradients.
    if (ctx->needs_input_grad(1)) gw1 = torch::zeros_like(w1);
    if (ctx->needs_input_grad(2)) gb1 = torch::zeros({plan.num_experts, f}, o);
    if (ctx->needs_input_grad(3)) gw2 = torch::zeros_like(w2);
    if (ctx->needs_input_grad(4)) gb2 = torch::zeros({plan.num_experts, dm}, o);
    int64_t max_rows = 0;
    for (int e = 0; e < plan.num_experts; ++e) {
      max_rows =
          std::max(max_rows, plan.host_offsets[e + 1] - plan.host_offsets[e]);
    }
    torch::Tensor dy = torch::empty({max_rows, f}, o);
    torch::Tensor gh = torch::empty({max_rows, f}, o);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "expert_mlp_bwd", [&] {
      for (int e = 0; e < plan.num_experts; ++e) {
        const int64_t lo = plan.host_offsets[e];
        const int64_t rows = plan.host_offsets[e + 1] - lo;
        if (rows == 0) continue;
        const torch::Tensor ge = g.narrow(0, lo, rows);
        if (gb2.defined()) {
          const scalar_t* gp = ge.data_ptr<scalar_t>();
          ForRowBlocks<scalar_t>(rows, dm, gb2[e].data_ptr<scalar_t>(),
                                 [&](int64_t r0, int64_t nr, scalar_t* part) {
                                   model::cpu::ColumnSums(gp + r0 * dm, part,
                                                          dm, nr);
                                 });
        }
        if (gw2.defined()) {
          torch::Tensor we = gw2[e];
          torch::mm_out(we, y.narrow(0, lo, rows).t(), ge);
        }
        torch::Tensor dye = dy.narrow(0, 0, rows);
        torch::mm_out(dye, ge, w2[e].t());
        torch::Tensor ghe = gh.narrow(0, 0, rows);
        const scalar_t* dyp = dye.data_ptr<scalar_t>();
        const scalar_t* hp = h.narrow(0, lo, rows).data_ptr<scalar_t>();
        scalar_t* ghp = ghe.data_ptr<scalar_t>();
        ForRowBlocks<scalar_t>(
            rows, f, gb1.defined() ? gb1[e].data_ptr<scalar_t>() : nullptr,
            [&](int64_t r0, int64_t nr, scalar_t* part) {
              model::cpu::GeluGradBiasRows(dyp + r0 * f, hp + r0 * f,
                                           ghp + r0 * f, part, f, nr);
            });
        if (gw1.defined()) {
          torch::Tensor we = gw1[e];
          torch::mm_out(we, x.narrow(0, lo, rows).t(), ghe);
        }
        if (gx.defined()) {
          torch::Tensor xe = gx.narrow(0, lo, rows);
          torch::mm_out(xe, ghe, w1[e].t());
        }
      }
    });
    return {gx, gw1, gb1, gw2, gb2, torch::Tensor()};
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
#if defined(SMOE_WITH_TORCH_CUDA) && defined(SMOE_WITH_CUDA)
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
      logits.is_cuda()));
  // Routing math is float32 whatever the logits' dtype (bf16 under autocast):
  // top-k on bf16 logits would tie far more often, and the gate weights feed
  // the combine in float32 (differentiable cast; float64 stays float64 on the
  // CPU for the gradient checks).
  const bool keep_f64 =
      logits.is_cpu() && logits.scalar_type() == torch::kFloat64;
  torch::Tensor l = keep_f64 ? logits : logits.to(torch::kFloat32);
  variable_list out = RouterTopKFn::apply(l, static_cast<int64_t>(top_k),
                                          static_cast<int64_t>(gating));
  RouterOutput r;
  r.topk_weights = out[0];
  r.topk_idx = out[1];
  r.num_tokens_per_expert = out[2];
  r.expert_offsets = out[3];
  return r;
}

absl::StatusOr<Plan> BuildPermutePlan(const torch::Tensor& topk_idx,
                                      int num_experts) {
  if (topk_idx.dim() != 2 || (topk_idx.scalar_type() != torch::kInt32 &&
                              topk_idx.scalar_type() != torch::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topk_idx must be [num_tokens, top_k] int32 or int64, got ",
        Shape(topk_idx), " ", DtypeName(topk_idx)));
  }
  Plan p;
  p.num_tokens = topk_idx.size(0);
  p.top_k = static_cast<int>(topk_idx.size(1));
  p.num_experts = num_experts;
  SMOE_RETURN_IF_ERROR(kernels::ValidatePermuteArgs(
      p.num_tokens, num_experts, p.top_k, /*hidden=*/1, topk_idx.is_cuda()));
  torch::Tensor idx = topk_idx.to(torch::kInt32).contiguous();
  p.sorted_idx = Int32Like({p.num_rows()}, idx);
  p.dest_idx = Int32Like({p.num_rows()}, idx);
  p.expert_offsets = Int32Like({num_experts + 1}, idx);
  torch::Tensor counts = Int32Like({num_experts}, idx);
  SMOE_RETURN_IF_ERROR(launch::BuildPlan(idx, p, counts));
  // The grouped GEMM sizes its problems on the host: on CUDA this is the
  // layer's one device-to-host copy (it synchronises); on the CPU a no-op.
  torch::Tensor host = p.expert_offsets.to(torch::kCPU);
  const int32_t* ho = host.data_ptr<int32_t>();
  p.host_offsets.assign(ho, ho + num_experts + 1);
  if (p.host_offsets[num_experts] != p.num_rows()) {
    // Both builders skip entries outside [0, num_experts): name the first.
    torch::Tensor h = idx.cpu();
    SMOE_RETURN_IF_ERROR(kernels::ValidateTopkIdx(
        h.data_ptr<int32_t>(), p.num_tokens, p.top_k, num_experts));
    return absl::InternalError(absl::StrCat("permute plan placed ",
                                            p.host_offsets[num_experts], " of ",
                                            p.num_rows(), " rows"));
  }
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
  // Gate weights are float32 next to float32/bf16 expert outputs (the GPU
  // combine's contract) and float64 next to float64 ones (differentiable).
  const auto wt = expert_out.scalar_type() == torch::kFloat64 ? torch::kFloat64
                                                              : torch::kFloat32;
  return CombineFn::apply(expert_out, topk_weights.to(wt), plan);
}

namespace {

absl::Status CheckGroupedLinear(const torch::Tensor& a,
                                const torch::Tensor& weight,
                                const torch::Tensor& bias, const Plan& plan) {
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
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<torch::Tensor> GroupedLinear(const torch::Tensor& a,
                                            const torch::Tensor& weight,
                                            const torch::Tensor& bias,
                                            const Plan& plan) {
  SMOE_RETURN_IF_ERROR(CheckGroupedLinear(a, weight, bias, plan));
  return GroupedLinearFn::apply(a, weight, bias, plan);
}

bool FusedExpertMlpSupported(const torch::Tensor& buffer) {
  return CpuFloatLoops(buffer) && !AutocastDtype(buffer).has_value();
}

absl::StatusOr<torch::Tensor> ExpertMlp(const torch::Tensor& buffer,
                                        const torch::Tensor& w1,
                                        const torch::Tensor& b1,
                                        const torch::Tensor& w2,
                                        const torch::Tensor& b2,
                                        const Plan& plan, bool unfused) {
  if (!unfused && FusedExpertMlpSupported(buffer)) {
    SMOE_RETURN_IF_ERROR(CheckGroupedLinear(buffer, w1, b1, plan));
    if (w2.dim() != 3 || w2.size(0) != plan.num_experts ||
        w2.size(1) != w1.size(2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("w2 must be [num_experts=", plan.num_experts,
                       ", mlp=", w1.size(2), ", n], got ", Shape(w2)));
    }
    SMOE_RETURN_IF_ERROR(CheckShape(b2, "b2", {plan.num_experts, w2.size(2)}));
    for (const auto& [t, name] : {std::pair{&w2, "w2"}, std::pair{&b2, "b2"}}) {
      SMOE_RETURN_IF_ERROR(CheckDevice(*t, name, buffer.device()));
      if (t->scalar_type() != buffer.scalar_type()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " has dtype ", DtypeName(*t), ", expected ",
                         DtypeName(buffer)));
      }
    }
    return ExpertMlpFn::apply(buffer, w1, b1, w2, b2, plan);
  }
  SMOE_ASSIGN_OR_RETURN(torch::Tensor h, GroupedLinear(buffer, w1, b1, plan));
  // NOTE: the cast is a no-op unless an autocast list changed gelu's dtype.
  // GeluTanh: torch::gelu(h, "tanh") with vectorised loops on CPU
  // float32/64 (worker/model/fused_ops.h), torch::gelu elsewhere.
  return GroupedLinear(GeluTanh(h).to(h.scalar_type()), w2, b2, plan);
}

absl::StatusOr<torch::Tensor> RoutedExperts(const torch::Tensor& x,
                                            const RouterOutput& routing,
                                            const torch::Tensor& w1,
                                            const torch::Tensor& b1,
                                            const torch::Tensor& w2,
                                            const torch::Tensor& b2) {
  SMOE_ASSIGN_OR_RETURN(
      Plan plan, BuildPermutePlan(
                     routing.topk_idx,
                     static_cast<int>(routing.num_tokens_per_expert.numel())));
  // Mixed precision: custom Functions are not autocast-aware, so under
  // autocast the expert path (permute, both GEMMs, combine) is cast here to
  // autocast's dtype; without this the expert GEMMs would silently run in
  // float32. Gate weights stay float32 (RouterTopK).
  const std::optional<at::ScalarType> low = AutocastDtype(x);
  auto cast = [&](const torch::Tensor& t) {
    return low.has_value() ? t.to(*low) : t;
  };
  SMOE_ASSIGN_OR_RETURN(torch::Tensor buffer, Permute(cast(x), plan));
  SMOE_ASSIGN_OR_RETURN(torch::Tensor y, ExpertMlp(buffer, cast(w1), cast(b1),
                                                   cast(w2), cast(b2), plan));
  return Combine(y, routing.topk_weights, plan);
}

absl::StatusOr<torch::Tensor> MoeForward(
    const torch::Tensor& x, const torch::Tensor& logits, int top_k,
    kernels::RouterGating gating, const torch::Tensor& w1,
    const torch::Tensor& b1, const torch::Tensor& w2, const torch::Tensor& b2,
    RouterOutput* routing) {
  SMOE_ASSIGN_OR_RETURN(RouterOutput r, RouterTopK(logits, top_k, gating));
  SMOE_ASSIGN_OR_RETURN(torch::Tensor out, RoutedExperts(x, r, w1, b1, w2, b2));
  if (routing != nullptr) *routing = std::move(r);
  return out;
}

}  // namespace smoe::model::ops
