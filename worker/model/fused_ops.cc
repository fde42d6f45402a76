// Copyright 2026 SMoE Lab authors.
#include "worker/model/fused_ops.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "worker/model/fused_cpu_kernels.h"

namespace smoe::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using cpu::AttentionDims;

AttentionDims DimsOf(const torch::Tensor& qkv, int64_t heads, int64_t dk,
                     int64_t dv) {
  return cpu::MakeAttentionDims(qkv.size(0), qkv.size(1), heads, dk, dv,
                                qkv.size(2));
}

class FusedAttentionFn : public torch::autograd::Function<FusedAttentionFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor qkv,
                               torch::Tensor rel_bias, torch::Tensor bucket,
                               torch::Tensor keep, int64_t heads, int64_t dk,
                               int64_t dv, double scale) {
    qkv = qkv.contiguous();
    const AttentionDims d = DimsOf(qkv, heads, dk, dv);
    // [H, T, tp] key-major (key j, query i at j * tp + i): the bias of
    // every (query, key) pair, gathered once; padding queries 0.
    torch::Tensor bias = torch::constant_pad_nd(rel_bias.detach()
                                                    .index_select(1, bucket)
                                                    .view({d.h, d.t, d.t})
                                                    .transpose(1, 2),
                                                {0, d.tp - d.t}, 0)
                             .contiguous();
    torch::Tensor p = torch::empty({d.b, d.h, d.t, d.tp}, qkv.options());
    torch::Tensor y = torch::empty({d.b, d.t, d.h * d.dv}, qkv.options());
    // keep: [T, T] -> key-major [T, tp] padded with 0, or empty (no dropout;
    // autograd takes no undefined inputs).
    torch::Tensor kp = keep.numel() > 0
                           ? torch::constant_pad_nd(keep.view({d.t, d.t}).t(),
                                                    {0, d.tp - d.t}, 0)
                                 .contiguous()
                           : keep;
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "fused_attention_fwd", [&] {
      const scalar_t* kptr = kp.numel() > 0 ? kp.data_ptr<scalar_t>() : nullptr;
      at::parallel_for(0, d.h, 1, [&](int64_t h0, int64_t h1) {
        cpu::AttentionForwardHeads(
            qkv.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), kptr,
            static_cast<scalar_t>(scale), d, p.data_ptr<scalar_t>(),
            y.data_ptr<scalar_t>(), h0, h1);
      });
    });
    ctx->save_for_backward({qkv, p, bucket, kp});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["dk"] = dk;
    ctx->saved_data["dv"] = dv;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["nb"] = rel_bias.size(1);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const torch::Tensor& p = saved[1];
    const torch::Tensor& bucket = saved[2];
    const torch::Tensor& keep = saved[3];
    const AttentionDims d =
        DimsOf(qkv, ctx->saved_data["heads"].toInt(),
               ctx->saved_data["dk"].toInt(), ctx->saved_data["dv"].toInt());
    const double scale = ctx->saved_data["scale"].toDouble();
    const int64_t nb = ctx->saved_data["nb"].toInt();
    torch::Tensor gqkv, grel;
    if (grads[0].defined()) {
      torch::Tensor gy = grads[0].contiguous();
      gqkv = torch::empty_like(qkv);
      torch::Tensor gbias = torch::empty({d.h, d.t, d.tp}, qkv.options());
      AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "fused_attention_bwd", [&] {
        const scalar_t* kptr =
            keep.numel() > 0 ? keep.data_ptr<scalar_t>() : nullptr;
        at::parallel_for(0, d.h, 1, [&](int64_t h0, int64_t h1) {
          cpu::AttentionBackwardHeads(
              qkv.data_ptr<scalar_t>(), p.data_ptr<scalar_t>(), kptr,
              gy.data_ptr<scalar_t>(), static_cast<scalar_t>(scale), d,
              gqkv.data_ptr<scalar_t>(), gbias.data_ptr<scalar_t>(), h0, h1);
        });
      });
      grel =
          torch::zeros({d.h, nb}, qkv.options())
              .index_add_(
                  1, bucket,
                  gbias.narrow(2, 0, d.t).transpose(1, 2).reshape({d.h, -1}));
    }
    return {gqkv,
            grel,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

constexpr int64_t kGrain = 1 << 14;

class GeluTanhFn : public torch::autograd::Function<GeluTanhFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    x = x.contiguous();
    torch::Tensor y = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_tanh_fwd", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* yp = y.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        cpu::GeluTanhRange(xp + lo, yp + lo, hi - lo);
      });
    });
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    if (!grads[0].defined()) return {torch::Tensor()};
    torch::Tensor g = grads[0].contiguous();
    torch::Tensor gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_tanh_bwd", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = gx.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        cpu::GeluTanhGradRange(gp + lo, xp + lo, op + lo, hi - lo);
      });
    });
    return {gx};
  }
};

// Rows per block of the LayerNorm backward's weight/bias partial sums.
constexpr int64_t kLnRowBlock = 256;

// out = x . w + b on CPU float32/float64: the bias rows written by memcpy,
// then an in-place addmm_ (BLAS beta = 1) instead of addmm's broadcasting
// copy; backward: the two GEMMs of AddmmBackward and the bias gradient as
// column sums over fixed kLnRowBlock-row blocks folded in block order
// (deterministic for any thread count) instead of LibTorch's sum.
class LinearFn : public torch::autograd::Function<LinearFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor w, torch::Tensor b) {
    x = x.contiguous();
    w = w.contiguous();
    const torch::Tensor bc = b.detach().contiguous();
    const int64_t rows = x.size(0), n = w.size(1);
    torch::Tensor out = torch::empty({rows, n}, x.options());
    const size_t bytes = static_cast<size_t>(n) * out.element_size();
    char* op = static_cast<char*>(out.data_ptr());
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(op + r * bytes, bc.data_ptr(), bytes);
    }
    out.addmm_(x, w);
    ctx->save_for_backward({x, w});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w = saved[1];
    torch::Tensor gx, gw, gb;
    if (!grads[0].defined()) return {gx, gw, gb};
    const torch::Tensor g = grads[0].contiguous();
    if (ctx->needs_input_grad(0)) gx = g.mm(w.t());
    if (ctx->needs_input_grad(1)) gw = x.t().mm(g);
    if (ctx->needs_input_grad(2)) {
      const int64_t rows = g.size(0), n = g.size(1);
      const int64_t blocks = (rows + kLnRowBlock - 1) / kLnRowBlock;
      torch::Tensor part = torch::empty({blocks, n}, g.options());
      gb = torch::zeros({n}, g.options());
      AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "linear_bias_grad", [&] {
        const scalar_t* gp = g.data_ptr<scalar_t>();
        scalar_t* pp = part.data_ptr<scalar_t>();
        at::parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; ++k) {
            const int64_t r0 = k * kLnRowBlock;
            cpu::ColumnSums(gp + r0 * n, pp + k * n, n,
                            std::min(rows, r0 + kLnRowBlock) - r0);
          }
        });
        scalar_t* out = gb.data_ptr<scalar_t>();
        for (int64_t k = 0; k < blocks; ++k) {
          for (int64_t c = 0; c < n; ++c) out[c] += pp[k * n + c];
        }
      });
    }
    return {gx, gw, gb};
  }
};

class AddLayerNormFn : public torch::autograd::Function<AddLayerNormFn> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor y, torch::Tensor weight,
                               torch::Tensor bias, double eps) {
    x = x.contiguous();
    y = y.contiguous();
    const int64_t dm = x.size(-1), rows = x.numel() / dm;
    torch::Tensor w = weight.detach().contiguous();
    torch::Tensor b = bias.detach().contiguous();
    torch::Tensor s = torch::empty_like(x), n = torch::empty_like(x);
    torch::Tensor mean = torch::empty({rows}, x.options());
    torch::Tensor rstd = torch::empty({rows}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "add_layer_norm_fwd", [&] {
      at::parallel_for(0, rows, kLnRowBlock, [&](int64_t r0, int64_t r1) {
        cpu::AddLayerNormRows(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                              w.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(),
                              eps, dm, s.data_ptr<scalar_t>(),
                              n.data_ptr<scalar_t>(), mean.data_ptr<scalar_t>(),
                              rstd.data_ptr<scalar_t>(), r0, r1);
      });
    });
    ctx->save_for_backward({s, mean, rstd, w});
    return {s, n};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& s = saved[0];
    const torch::Tensor& mean = saved[1];
    const torch::Tensor& rstd = saved[2];
    const torch::Tensor& w = saved[3];
    const int64_t dm = s.size(-1), rows = s.numel() / dm;
    const torch::Tensor gs =
        grads[0].defined() ? grads[0].contiguous() : torch::Tensor();
    if (!grads[1].defined()) {
      return {gs, gs, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    const torch::Tensor gn = grads[1].contiguous();
    torch::Tensor gx = torch::empty_like(s);
    // Fixed row blocks, each with its own weight/bias partial sums, folded
    // in block order below: the same sums for any thread count.
    const int64_t blocks = (rows + kLnRowBlock - 1) / kLnRowBlock;
    torch::Tensor part = torch::empty({blocks, 2, dm}, s.options());
    AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "add_layer_norm_bwd", [&] {
      const scalar_t* gsp = gs.defined() ? gs.data_ptr<scalar_t>() : nullptr;
      scalar_t* pp = part.data_ptr<scalar_t>();
      at::parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          cpu::AddLayerNormBackwardRows(
              s.data_ptr<scalar_t>(), mean.data_ptr<scalar_t>(),
              rstd.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
              gn.data_ptr<scalar_t>(), gsp, dm, gx.data_ptr<scalar_t>(),
              pp + k * 2 * dm, pp + k * 2 * dm + dm, k * kLnRowBlock,
              std::min(rows, (k + 1) * kLnRowBlock));
        }
      });
    });
    torch::Tensor sums = part.sum(0);  // [2, dm]
    return {gx, gx, sums[0], sums[1], torch::Tensor()};
  }
};

}  // namespace

bool FusedAttentionSupported(const torch::Tensor& qkv) {
  return qkv.is_cpu() && (qkv.scalar_type() == torch::kFloat32 ||
                          qkv.scalar_type() == torch::kFloat64);
}

torch::Tensor FusedSoftmaxAttention(const torch::Tensor& qkv,
                                    const torch::Tensor& rel_bias,
                                    const torch::Tensor& bucket,
                                    const torch::Tensor& keep, int64_t heads,
                                    int64_t dk, int64_t dv, double scale) {
  TORCH_CHECK(FusedAttentionSupported(qkv),
              "fused attention: qkv must be a CPU float32/float64 tensor");
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) == heads * (2 * dk + dv),
              "fused attention: qkv must be [B, T, H*(2dk+dv)=",
              heads * (2 * dk + dv), "], got ", qkv.sizes());
  const int64_t t = qkv.size(1);
  TORCH_CHECK(rel_bias.dim() == 2 && rel_bias.size(0) == heads,
              "fused attention: rel_bias must be [H=", heads, ", NB], got ",
              rel_bias.sizes());
  TORCH_CHECK(bucket.numel() == t * t && bucket.scalar_type() == torch::kInt64,
              "fused attention: bucket must be int64 [T*T=", t * t, "]");
  TORCH_CHECK(!keep.defined() || keep.numel() == t * t,
              "fused attention: keep must be [T, T]");
  torch::Tensor k = keep.defined() ? keep.to(qkv.scalar_type())
                                   : torch::empty({0}, qkv.options());
  return FusedAttentionFn::apply(qkv, rel_bias.to(qkv.scalar_type()),
                                 bucket.reshape({-1}), k, heads, dk, dv, scale);
}

bool FastGeluSupported(const torch::Tensor& x) {
  return x.is_cpu() && (x.scalar_type() == torch::kFloat32 ||
                        x.scalar_type() == torch::kFloat64);
}

torch::Tensor GeluTanh(const torch::Tensor& x) {
  if (!FastGeluSupported(x)) return torch::gelu(x, "tanh");
  return GeluTanhFn::apply(x);
}

bool FusedAddLayerNormSupported(const torch::Tensor& x,
                                const torch::Tensor& y) {
  return x.is_cpu() && y.is_cpu() &&
         (x.scalar_type() == torch::kFloat32 ||
          x.scalar_type() == torch::kFloat64) &&
         y.scalar_type() == x.scalar_type() && x.sizes() == y.sizes() &&
         x.dim() >= 1 && x.numel() > 0;
}

std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(
    const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& weight,
    const torch::Tensor& bias, double eps, bool unfused) {
  const int64_t dm = x.size(-1);
  if (unfused || !FusedAddLayerNormSupported(x, y) ||
      weight.scalar_type() != x.scalar_type() || !weight.is_cpu() ||
      weight.numel() != dm || bias.numel() != dm) {
    torch::Tensor s = x + y;
    torch::Tensor n = torch::layer_norm(s, {dm}, weight, bias, eps);
    return {s, n};
  }
  variable_list out = AddLayerNormFn::apply(x, y, weight, bias, eps);
  return {out[0], out[1]};
}

bool FusedLinearSupported(const torch::Tensor& x, const torch::Tensor& w,
                          const torch::Tensor& b) {
  return x.is_cpu() && w.is_cpu() && b.is_cpu() &&
         (x.scalar_type() == torch::kFloat32 ||
          x.scalar_type() == torch::kFloat64) &&
         w.scalar_type() == x.scalar_type() &&
         b.scalar_type() == x.scalar_type() && x.dim() == 2 && w.dim() == 2 &&
         b.dim() == 1 && x.size(1) == w.size(0) && b.size(0) == w.size(1);
}

torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& w,
                     const torch::Tensor& b, bool unfused) {
  if (unfused || !FusedLinearSupported(x, w, b)) return torch::addmm(b, x, w);
  return LinearFn::apply(x, w, b);
}

bool FusedAdamWSupported(const torch::Tensor& p, const torch::Tensor& g,
                         const torch::Tensor& m, const torch::Tensor& v) {
  const auto dt = p.scalar_type();
  auto same = [&](const torch::Tensor& t) {
    return t.is_cpu() && t.scalar_type() == dt && t.is_contiguous() &&
           t.numel() == p.numel();
  };
  return (dt == torch::kFloat32 || dt == torch::kFloat64) && same(p) &&
         same(m) && same(v) && (!g.defined() || same(g));
}

void AdamWStep(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
               torch::Tensor& v, const AdamWHyper& h, bool unfused) {
  torch::NoGradGuard no_grad;
  if (unfused || !FusedAdamWSupported(p, g, m, v)) {
    const torch::Tensor gr = g.defined() ? g : torch::zeros_like(p);
    m.mul_(h.b1).add_(gr, 1.0 - h.b1);
    v.mul_(h.b2).addcmul_(gr, gr, 1.0 - h.b2);
    torch::Tensor update = (m / h.bc1) / ((v / h.bc2).sqrt() + h.eps);
    if (h.weight_decay > 0) update.add_(p, h.weight_decay);
    p.add_(update, -h.lr);
    return;
  }
  const cpu::AdamWScalars s{h.lr,
                            h.b1,
                            h.b2,
                            h.bc1,
                            h.bc2,
                            h.eps,
                            h.weight_decay > 0 ? h.weight_decay : 0.0};
  // 32k elements per chunk: big parameters split over the threads.
  constexpr int64_t kAdamGrain = 32768;
  AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "adamw_step", [&] {
    scalar_t* pp = p.data_ptr<scalar_t>();
    const scalar_t* gp = g.defined() ? g.data_ptr<scalar_t>() : nullptr;
    scalar_t* mp = m.data_ptr<scalar_t>();
    scalar_t* vp = v.data_ptr<scalar_t>();
    at::parallel_for(0, p.numel(), kAdamGrain, [&](int64_t lo, int64_t hi) {
      cpu::AdamWRange(pp + lo, gp != nullptr ? gp + lo : nullptr, mp + lo,
                      vp + lo, s, hi - lo);
    });
  });
}

}  // namespace smoe::model
