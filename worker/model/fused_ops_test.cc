// Copyright 2026 SMoE Lab authors.
#include "worker/model/fused_ops.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "worker/model/attention.h"
#include "worker/model/model_config.h"

namespace smoe::model {
namespace {

// The unfused reference written with plain LibTorch ops (differentiable).
torch::Tensor Reference(const torch::Tensor& qkv, const torch::Tensor& rel,
                        const torch::Tensor& bucket, const torch::Tensor& keep,
                        int64_t h, int64_t dk, int64_t dv, double scale) {
  const int64_t b = qkv.size(0), t = qkv.size(1);
  auto q = qkv.narrow(2, 0, h * dk).view({b, t, h, dk}).permute({0, 2, 1, 3});
  auto k =
      qkv.narrow(2, h * dk, h * dk).view({b, t, h, dk}).permute({0, 2, 1, 3});
  auto v = qkv.narrow(2, 2 * h * dk, h * dv)
               .reshape({b, t, h, dv})
               .permute({0, 2, 1, 3});
  auto bias = rel.index_select(1, bucket).view({h, t, t});
  auto a =
      torch::softmax(torch::matmul(q, k.transpose(-1, -2)) * scale + bias, -1);
  if (keep.defined()) a = a * keep;
  return torch::matmul(a, v).permute({0, 2, 1, 3}).reshape({b, t, h * dv});
}

struct Inputs {
  torch::Tensor qkv, rel, bucket, keep;
};

Inputs Random(torch::Dtype dtype, int64_t b, int64_t t, int64_t h, int64_t dk,
              int64_t dv, int64_t nb, bool dropout) {
  Inputs in;
  const auto o = torch::TensorOptions(dtype);
  in.qkv = torch::randn({b, t, h * (2 * dk + dv)}, o).mul_(2.0);
  in.rel = torch::randn({h, nb}, o);
  in.bucket = RelativeBucketMatrix(static_cast<int>(t)).reshape({-1});
  if (nb != t) in.bucket = in.bucket.remainder(nb);
  if (dropout) {
    in.keep = torch::bernoulli(torch::full({t, t}, 0.7, o)).div_(0.7);
  }
  return in;
}

TEST(FusedAttentionTest, ForwardAndGradientsMatchUnfusedOps) {
  torch::manual_seed(3);
  for (bool dropout : {false, true}) {
    for (auto [h, dk, dv, t] :
         {std::tuple<int64_t, int64_t, int64_t, int64_t>{2, 4, 4, 9},
          {3, 2, 5, 7},
          {16, 4, 4, 36}}) {
      for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
        Inputs in = Random(dtype, 3, t, h, dk, dv, t, dropout);
        const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
        torch::Tensor q1 = in.qkv.clone().requires_grad_(true);
        torch::Tensor r1 = in.rel.clone().requires_grad_(true);
        torch::Tensor q2 = in.qkv.clone().requires_grad_(true);
        torch::Tensor r2 = in.rel.clone().requires_grad_(true);
        torch::Tensor y1 =
            FusedSoftmaxAttention(q1, r1, in.bucket, in.keep, h, dk, dv, scale);
        torch::Tensor y2 =
            Reference(q2, r2, in.bucket, in.keep, h, dk, dv, scale);
        torch::Tensor g = torch::randn_like(y1);
        (y1 * g).sum().backward();
        (y2 * g).sum().backward();
        const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
        SCOPED_TRACE(::testing::Message()
                     << "h=" << h << " dk=" << dk << " dv=" << dv << " t=" << t
                     << " dropout=" << dropout << " dtype=" << dtype);
        EXPECT_TRUE(torch::allclose(y1, y2, tol, tol))
            << (y1 - y2).abs().max().item<double>();
        EXPECT_TRUE(torch::allclose(q1.grad(), q2.grad(), tol, tol))
            << (q1.grad() - q2.grad()).abs().max().item<double>();
        EXPECT_TRUE(torch::allclose(r1.grad(), r2.grad(), tol, tol))
            << (r1.grad() - r2.grad()).abs().max().item<double>();
      }
    }
  }
}

TEST(FusedAttentionTest, OneAndTwoThreadsGiveTheSameBits) {
  // The loops split the heads over the intra-op threads; every output
  // element and the per-head bias gradient are computed by one thread in a
  // fixed order, so 1 and 2 threads agree exactly (and with the reference).
  torch::manual_seed(4);
  const int threads_before = at::get_num_threads();
  for (bool dropout : {false, true}) {
    Inputs in = Random(torch::kFloat32, 5, 36, 16, 4, 4, 36, dropout);
    const double scale = 0.5;
    std::vector<torch::Tensor> got[2];
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      torch::Tensor q = in.qkv.clone().requires_grad_(true);
      torch::Tensor r = in.rel.clone().requires_grad_(true);
      torch::Tensor y =
          FusedSoftmaxAttention(q, r, in.bucket, in.keep, 16, 4, 4, scale);
      torch::Tensor g = torch::cos(torch::arange(y.numel()).view(y.sizes()));
      (y * g).sum().backward();
      got[threads - 1] = {y.detach(), q.grad(), r.grad()};
      torch::Tensor q2 = in.qkv.clone().requires_grad_(true);
      torch::Tensor r2 = in.rel.clone().requires_grad_(true);
      torch::Tensor y2 = Reference(q2, r2, in.bucket, in.keep, 16, 4, 4, scale);
      (y2 * g).sum().backward();
      EXPECT_TRUE(torch::allclose(y, y2, 2e-5, 2e-5)) << threads;
      EXPECT_TRUE(torch::allclose(q.grad(), q2.grad(), 2e-5, 2e-5)) << threads;
      EXPECT_TRUE(torch::allclose(r.grad(), r2.grad(), 2e-5, 2e-5)) << threads;
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(torch::equal(got[0][i], got[1][i]))
          << "output " << i << " dropout " << dropout;
    }
  }
  at::set_num_threads(threads_before);
}

TEST(FusedAttentionTest, GradcheckFloat64) {
  // Finite differences on the fused op itself (float64, small shape, with a
  // bucket table that maps several pairs to one bias entry).
  torch::manual_seed(5);
  for (bool dropout : {false, true}) {
    Inputs in = Random(torch::kFloat64, 2, 5, 2, 3, 2, 3, dropout);
    torch::Tensor qkv = in.qkv.clone().requires_grad_(true);
    torch::Tensor rel = in.rel.clone().requires_grad_(true);
    auto f = [&](const torch::Tensor& a, const torch::Tensor& r) {
      return FusedSoftmaxAttention(a, r, in.bucket, in.keep, 2, 3, 2,
                                   1.0 / std::sqrt(3.0));
    };
    torch::Tensor g = torch::randn({2, 5, 4}, torch::kFloat64);
    torch::Tensor loss = (f(qkv, rel) * g).sum();
    auto grads = torch::autograd::grad({loss}, {qkv, rel});
    const double eps = 1e-6;
    for (int which = 0; which < 2; ++which) {
      torch::Tensor base = which == 0 ? in.qkv : in.rel;
      torch::Tensor num = torch::zeros_like(base);
      auto flat = num.view({-1});
      for (int64_t i = 0; i < base.numel(); ++i) {
        torch::Tensor p = base.clone(), m = base.clone();
        p.view({-1})[i] += eps;
        m.view({-1})[i] -= eps;
        torch::NoGradGuard ng;
        const double lp = which == 0 ? (f(p, in.rel) * g).sum().item<double>()
                                     : (f(in.qkv, p) * g).sum().item<double>();
        const double lm = which == 0 ? (f(m, in.rel) * g).sum().item<double>()
                                     : (f(in.qkv, m) * g).sum().item<double>();
        flat[i] = (lp - lm) / (2 * eps);
      }
      EXPECT_TRUE(torch::allclose(grads[which], num, 1e-6, 1e-6))
          << "input " << which << " dropout " << dropout << " max diff "
          << (grads[which] - num).abs().max().item<double>();
    }
  }
}

TEST(FusedAttentionTest, AttentionModuleFusedMatchesUnfused) {
  // The module's fused path (one qkv GEMM, fused op, addmm) against its own
  // unfused path, with dropout (same generator state) and gradients.
  ModelConfig c;
  c.num_features = 1;
  c.width = 0.25;  // D = 32, H = 4, d = 4
  c.attention_dropout = 0.2;
  Attention attn(c);
  torch::Tensor x = torch::randn({3, c.seq_len(), c.model_dim()});
  for (bool train : {false, true}) {
    attn->train(train);
    torch::manual_seed(11);
    torch::Tensor y1 = attn->FusedForward(x);
    y1.pow(2).sum().backward();
    std::vector<torch::Tensor> g1;
    for (auto& p : attn->parameters()) {
      g1.push_back(p.grad().clone());
      p.mutable_grad().zero_();
    }
    torch::manual_seed(11);
    torch::Tensor y2 = attn->UnfusedForward(x);
    y2.pow(2).sum().backward();
    EXPECT_TRUE(torch::allclose(y1, y2, 1e-5, 1e-5))
        << "train " << train << " " << (y1 - y2).abs().max().item<double>();
    auto params = attn->named_parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor g2 = params[i].value().grad();
      if (params[i].key() == "bk") {
        // Softmax over keys ignores a bias shared by every key: the exact
        // gradient is 0, so both paths must give rounding noise only (the
        // noise itself differs between the paths).
        EXPECT_LT(g1[i].abs().max().item<double>(), 1e-4) << "fused bk";
        EXPECT_LT(g2.abs().max().item<double>(), 1e-4) << "unfused bk";
        params[i].value().mutable_grad().zero_();
        continue;
      }
      EXPECT_TRUE(torch::allclose(g1[i], g2, 1e-4, 1e-5))
          << params[i].key() << " train " << train << " "
          << (g1[i] - g2).abs().max().item<double>();
      params[i].value().mutable_grad().zero_();
    }
  }
}

TEST(FusedAttentionTest, RejectsBadShapes) {
  torch::Tensor qkv = torch::randn({2, 9, 10});
  torch::Tensor rel = torch::randn({2, 9});
  torch::Tensor bucket = RelativeBucketMatrix(9).reshape({-1});
  EXPECT_THROW(FusedSoftmaxAttention(qkv, rel, bucket, {}, 2, 4, 4, 0.5),
               c10::Error);
  EXPECT_FALSE(FusedAttentionSupported(torch::randn({2}, torch::kBFloat16)));
}

// --- tanh GELU ---

// Error of y against ref relative to the float rounding scale of GELU at x,
// eps * (1 + |x|) (1 + tanh and 1 - tanh^2 cancel for large |x|, so no
// implementation is accurate to a few ulps of y there; LibTorch's isn't).
double WorstScaledError(const torch::Tensor& y, const torch::Tensor& ref,
                        const torch::Tensor& x, double eps) {
  return ((y.to(torch::kFloat64) - ref).abs() /
          (eps * (1 + x.to(torch::kFloat64).abs().pow(3))))
      .max()
      .item<double>();
}

TEST(FastGeluTest, AsAccurateAsTorchGeluTanhAndItsGradient) {
  torch::manual_seed(7);
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64}) {
    // Normal values, the extremes and exact zeros (tanh's small-|u| end).
    torch::Tensor x = torch::cat(
        {torch::randn({70000}, dtype) * 3,
         torch::linspace(-30, 30, 2001, dtype), torch::zeros({5}, dtype),
         torch::tensor({1e-30, -1e-30, 1e-8, -1e-8, 200.0, -200.0}, dtype)});
    torch::Tensor a = x.clone().requires_grad_(true);
    torch::Tensor b = x.clone().requires_grad_(true);
    torch::Tensor r = x.to(torch::kFloat64).requires_grad_(true);
    torch::Tensor ya = GeluTanh(a);
    torch::Tensor yb = torch::gelu(b, "tanh");
    torch::Tensor yr = torch::gelu(r, "tanh");
    torch::Tensor g = torch::randn_like(ya);
    (ya * g).sum().backward();
    (yb * g).sum().backward();
    (yr * g.to(torch::kFloat64)).sum().backward();
    const double eps = dtype == torch::kFloat32 ? 0x1p-24 : 0x1p-53;
    const double ours_y = WorstScaledError(ya, yr, x, eps);
    const double torch_y = WorstScaledError(yb, yr, x, eps);
    const double ours_g = WorstScaledError(a.grad(), r.grad(), x, eps);
    const double torch_g = WorstScaledError(b.grad(), r.grad(), x, eps);
    SCOPED_TRACE(::testing::Message()
                 << dtype << ": worst error / (eps (1 + |x|^3)): ours y "
                 << ours_y << " grad " << ours_g << "; torch::gelu y "
                 << torch_y << " grad " << torch_g);
    EXPECT_LE(ours_y, std::max(16.0, 2 * torch_y));
    EXPECT_LE(ours_g, std::max(16.0, 2 * torch_g));
    // And plain closeness where y is not tiny (|x| <= 3: the bulk).
    torch::Tensor bulk = x.abs() <= 3;
    EXPECT_TRUE(torch::allclose(ya.masked_select(bulk), yb.masked_select(bulk),
                                1e-5, 1e-6));
  }
}

TEST(FastGeluTest, PropagatesNanAndFallsBackOffCpuFloat) {
  torch::Tensor y = GeluTanh(torch::tensor({NAN, 1.0f}));
  EXPECT_TRUE(std::isnan(y[0].item<float>()));
  torch::Tensor h = torch::randn({8}).to(torch::kBFloat16);
  EXPECT_FALSE(FastGeluSupported(h));
  EXPECT_TRUE(torch::equal(GeluTanh(h), torch::gelu(h, "tanh")));
}

// Residual add + LayerNorm against x + y and torch::layer_norm (the same
// function's unfused branch, taken on CUDA): both outputs and all four
// gradients, float32 and float64, with and without a gradient reaching
// the sum directly; rows span several backward blocks.
TEST(FusedAddLayerNormTest, MatchesUnfusedOpsAndGradients) {
  for (torch::Dtype dt : {torch::kFloat32, torch::kFloat64}) {
    for (bool use_sum : {true, false}) {
      torch::manual_seed(21);
      const auto o = torch::TensorOptions(dt);
      const torch::Tensor x0 = torch::randn({3, 333, 40}, o).mul_(3).add_(1);
      const torch::Tensor y0 = torch::randn({3, 333, 40}, o);
      const torch::Tensor w0 = torch::randn({40}, o);
      const torch::Tensor b0 = torch::randn({40}, o);
      const torch::Tensor gs = torch::randn({3, 333, 40}, o);
      const torch::Tensor gn = torch::randn({3, 333, 40}, o);
      std::vector<torch::Tensor> outs, grads;
      for (bool unfused : {false, true}) {
        torch::Tensor x = x0.clone().requires_grad_(true);
        torch::Tensor y = y0.clone().requires_grad_(true);
        torch::Tensor w = w0.clone().requires_grad_(true);
        torch::Tensor b = b0.clone().requires_grad_(true);
        auto [s, n] = AddLayerNorm(x, y, w, b, 1e-6, unfused);
        torch::Tensor loss = (n * gn).sum();
        if (use_sum) loss = loss + (s * gs).sum();
        loss.backward();
        outs.push_back(s.detach());
        outs.push_back(n.detach());
        for (auto* t : {&x, &y, &w, &b}) grads.push_back(t->grad());
      }
      const double rtol = dt == torch::kFloat64 ? 1e-10 : 1e-4;
      const double atol = dt == torch::kFloat64 ? 1e-10 : 2e-5;
      EXPECT_TRUE(torch::allclose(outs[0], outs[2], rtol, atol)) << dt;
      EXPECT_TRUE(torch::allclose(outs[1], outs[3], rtol, atol))
          << dt << " " << (outs[1] - outs[3]).abs().max().item<double>();
      const char* names[] = {"x", "y", "weight", "bias"};
      for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(torch::allclose(grads[i], grads[4 + i], rtol, atol))
            << dt << " sum " << use_sum << " grad " << names[i] << " "
            << (grads[i] - grads[4 + i]).abs().max().item<double>();
      }
    }
  }
}

TEST(FusedAddLayerNormTest, FallsBackOffCpuFloat) {
  torch::Tensor x = torch::randn({5, 8}).to(torch::kBFloat16);
  torch::Tensor y = torch::randn({5, 8}).to(torch::kBFloat16);
  torch::Tensor w = torch::ones({8}, torch::kBFloat16);
  torch::Tensor b = torch::zeros({8}, torch::kBFloat16);
  EXPECT_FALSE(FusedAddLayerNormSupported(x, y));
  auto [s, n] = AddLayerNorm(x, y, w, b, 1e-6);
  EXPECT_TRUE(torch::equal(s, x + y));
  EXPECT_TRUE(torch::equal(n, torch::layer_norm(x + y, {8}, w, b, 1e-6)));
}

// AdamW's fused loop against the LibTorch ops it replaces (the same
// function's unfused branch, which the trainer also takes on CUDA), over
// several updates, with and without decay and with a missing gradient.
TEST(FusedLinearTest, MatchesAddmmAndItsGradientsAtOneAndTwoThreads) {
  // Linear's CPU op (bias rows + in-place addmm_, blocked bias gradient)
  // against torch::addmm and its autograd (unfused = true), 999 rows =
  // several 256-row blocks; the bias gradient does not depend on the
  // thread count.
  torch::manual_seed(21);
  const int threads_before = at::get_num_threads();
  for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    const auto o = torch::TensorOptions(dtype);
    torch::Tensor x0 = torch::randn({999, 48}, o);
    torch::Tensor w0 = torch::randn({48, 40}, o).div_(7);
    torch::Tensor b0 = torch::randn({40}, o);
    torch::Tensor g = torch::randn({999, 40}, o);
    EXPECT_TRUE(FusedLinearSupported(x0, w0, b0));
    torch::Tensor gb_one_thread;
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      std::vector<torch::Tensor> res[2];
      for (bool unfused : {false, true}) {
        torch::Tensor x = x0.clone().requires_grad_(true);
        torch::Tensor w = w0.clone().requires_grad_(true);
        torch::Tensor b = b0.clone().requires_grad_(true);
        torch::Tensor y = Linear(x, w, b, unfused);
        (y * g).sum().backward();
        res[unfused] = {y.detach(), x.grad(), w.grad(), b.grad()};
      }
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
      const char* names[] = {"y", "grad x", "grad w", "grad b"};
      for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(torch::allclose(res[0][i], res[1][i], tol, tol))
            << names[i] << " dtype " << dtype << " threads " << threads << " "
            << (res[0][i] - res[1][i]).abs().max().item<double>();
      }
      if (threads == 1) {
        gb_one_thread = res[0][3];
      } else {
        EXPECT_TRUE(torch::equal(res[0][3], gb_one_thread)) << dtype;
      }
    }
  }
  at::set_num_threads(threads_before);
}

TEST(FusedLinearTest, FallsBackOffCpuFloat) {
  const auto bf = torch::TensorOptions(torch::kBFloat16);
  torch::Tensor x = torch::randn({5, 4}, bf), w = torch::randn({4, 3}, bf);
  torch::Tensor b = torch::randn({3}, bf);
  EXPECT_FALSE(FusedLinearSupported(x, w, b));
  EXPECT_FALSE(FusedLinearSupported(torch::randn({5, 4}), torch::randn({4, 3}),
                                    torch::randn({3}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(Linear(x, w, b), torch::addmm(b, x, w)));
}

TEST(FusedAdamWTest, MatchesUnfusedOpsFloat32AndFloat64) {
  for (torch::Dtype dt : {torch::kFloat32, torch::kFloat64}) {
    for (double wd : {0.0, 0.1}) {
      torch::manual_seed(3);
      const auto o = torch::TensorOptions(dt);
      torch::Tensor p1 = torch::randn({300, 7}, o);
      torch::Tensor m1 = torch::zeros_like(p1), v1 = torch::zeros_like(p1);
      torch::Tensor p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone();
      ASSERT_TRUE(FusedAdamWSupported(p1, torch::Tensor(), m1, v1));
      for (int t = 1; t <= 6; ++t) {
        AdamWHyper h;
        h.lr = 1e-2 / t;
        h.bc1 = 1 - std::pow(h.b1, t);
        h.bc2 = 1 - std::pow(h.b2, t);
        h.weight_decay = wd;
        // Update 3 has no gradient (a parameter the loss did not reach).
        torch::Tensor g = t == 3 ? torch::Tensor() : torch::randn({300, 7}, o);
        AdamWStep(p1, g, m1, v1, h);
        AdamWStep(p2, g, m2, v2, h, /*unfused=*/true);
      }
      const double rtol = dt == torch::kFloat64 ? 1e-12 : 1e-6;
      const double atol = dt == torch::kFloat64 ? 1e-14 : 1e-7;
      EXPECT_TRUE(torch::allclose(p1, p2, rtol, atol))
          << dt << " wd " << wd << " " << (p1 - p2).abs().max().item<double>();
      EXPECT_TRUE(torch::allclose(m1, m2, rtol, atol)) << dt << " m";
      EXPECT_TRUE(torch::allclose(v1, v2, rtol, atol)) << dt << " v";
      EXPECT_FALSE(torch::equal(p1, torch::randn({1})));  // it moved
    }
  }
}

TEST(FusedAdamWTest, FallsBackOffCpuFloatAndOnStridedTensors) {
  torch::manual_seed(4);
  AdamWHyper h;
  h.lr = 0.1;
  h.bc1 = 0.1;
  h.bc2 = 0.001;
  // bf16: the LibTorch ops (the path CUDA takes), bit for bit.
  torch::Tensor p = torch::randn({64}).to(torch::kBFloat16);
  torch::Tensor g = torch::randn({64}).to(torch::kBFloat16);
  torch::Tensor m = torch::zeros_like(p), v = torch::zeros_like(p);
  EXPECT_FALSE(FusedAdamWSupported(p, g, m, v));
  torch::Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
  AdamWStep(p, g, m, v, h);
  AdamWStep(p2, g, m2, v2, h, /*unfused=*/true);
  EXPECT_TRUE(torch::equal(p, p2));
  EXPECT_FALSE(torch::equal(p, p2.clone().zero_()));
  // A strided gradient is not taken by the loop; the result still matches.
  torch::Tensor q = torch::randn({8, 8});
  torch::Tensor gq = torch::randn({8, 8}).t();
  torch::Tensor mq = torch::zeros_like(q), vq = torch::zeros_like(q);
  EXPECT_FALSE(FusedAdamWSupported(q, gq, mq, vq));
  torch::Tensor q2 = q.clone(), mq2 = mq.clone(), vq2 = vq.clone();
  AdamWStep(q, gq, mq, vq, h);
  AdamWStep(q2, gq.contiguous(), mq2, vq2, h);
  EXPECT_TRUE(torch::allclose(q, q2, 1e-6, 1e-7));
}

}  // namespace
}  // namespace smoe::model
