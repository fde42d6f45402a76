// Copyright 2026 SMoE Lab authors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "worker/model/attention.h"
#include "worker/model/model_config.h"
#include "worker/model/moe.h"
#include "worker/model/ops/moe_ops.h"
#include "worker/model/transformer.h"

namespace smoe::model {
namespace {

ModelConfig Tiny() {
  ModelConfig c;
  c.num_features = 1;  // T = 9
  c.width = 0.125;     // D = 16, H = 2, d_k = 4, mlp = 32
  c.depth = 1;
  c.num_experts = 4;
  c.top_k = 2;
  return c;
}

// Hand computation of the dense parameter count (docs/sraven.md 2.3).
int64_t SpecDenseCount(int w, int depth, int m = 4) {
  const int64_t d = 128 * w, h = 16 * w, qk = 64 * w, v = 64 * w, mlp = 256 * w,
                f = 8, t = 9 * m;
  const int64_t layer = 2 * (2 * d)          // two LayerNorms
                        + h * t              // relative bias table
                        + 2 * (d * qk + qk)  // q, k
                        + (d * v + v)        // v
                        + (v * d + d)        // output projection
                        + (d * mlp + mlp) + (mlp * d + d);  // MLP
  return depth * layer + (f * d + d) + 2 * d + (d * f + f);
}

TEST(ModelConfigTest, Validate) {
  ModelConfig c;
  EXPECT_TRUE(ValidateModelConfig(c).ok());
  c.width = 0.3;
  EXPECT_FALSE(ValidateModelConfig(c).ok());
  c.width = 0.25;
  c.top_k = 9;
  EXPECT_FALSE(ValidateModelConfig(c).ok());
  EXPECT_EQ(c.head_dim(), 4);
}

TEST(ModelTest, BucketMapT36MatchesSpecTable) {
  // docs/sraven.md 2.2: n = 0..20 -> n; 21..31 -> n+1; 32 -> 32; 33..35 -> n.
  for (int n = 0; n < 36; ++n) {
    int want = n;
    if (n >= 21 && n <= 31) want = n + 1;
    EXPECT_EQ(RelativePositionBucket(n, 0, 36, 36), want) << "n=" << n;
  }
  // One-sided: keys at or after the query share bucket 0.
  EXPECT_EQ(RelativePositionBucket(3, 3, 36, 36), 0);
  EXPECT_EQ(RelativePositionBucket(3, 30, 36, 36), 0);
  std::vector<int> used(36, 0);
  for (int n = 0; n < 36; ++n) used[RelativePositionBucket(n, 0, 36, 36)] = 1;
  EXPECT_EQ(used[21], 0);  // bucket 21 is never used
}

TEST(ModelTest, DenseParameterCountsMatchSpecTable) {
  const std::map<std::pair<int, int>, int64_t> table = {{{1, 4}, 402824},
                                                        {{1, 8}, 803208},
                                                        {{1, 16}, 1603976},
                                                        {{2, 4}, 1592072},
                                                        {{2, 8}, 3179272}};
  for (const auto& [key, want] : table) {
    EXPECT_EQ(SpecDenseCount(key.first, key.second), want);
    ModelConfig c;
    c.width = key.first;
    c.depth = key.second;
    c.num_experts = 1;
    c.top_k = 1;
    SmoeTransformer model(c);
    EXPECT_EQ(CountParameters(*model), want)
        << "w=" << key.first << " L=" << key.second;
  }
}

TEST(ModelTest, SmoeParameterCounts) {
  ModelConfig c;  // w = 1, L = 4, E = 8
  const int64_t mlp = 128 * 256 + 256 + 256 * 128 + 128;
  SmoeTransformer topk(c);
  EXPECT_EQ(CountParameters(*topk), 402824 + 4 * (7 * mlp + 128 * 8));
  c.router = RouterKind::kSoft;
  SmoeTransformer soft(c);
  EXPECT_EQ(CountParameters(*soft), 402824 + 4 * (7 * mlp + 128 * 8 + 1));
}

TEST(ModelTest, ShapesForEveryVariant) {
  for (AttentionKind a :
       {AttentionKind::kSoftmax, AttentionKind::kLinear, AttentionKind::kHyla,
        AttentionKind::kLinearRmsHead, AttentionKind::kHylaNoRmsHead,
        AttentionKind::kHylaMlpLinear, AttentionKind::kHylaMlpLinearNoRmsHead,
        AttentionKind::kSoftmaxHyla}) {
    for (RouterKind r : {RouterKind::kTopK, RouterKind::kSoft}) {
      ModelConfig c = Tiny();
      c.num_features = 2;
      c.attention = a;
      c.router = r;
      SmoeTransformer model(c);
      torch::Tensor x = torch::rand({3, 18, 8});
      ForwardOutput out = model->forward(x, /*collect_router_stats=*/true);
      EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{3, 18, 8}))
          << AttentionKindName(a);
      ASSERT_EQ(out.router_stats.size(), 1u);
      EXPECT_EQ(out.router_stats[0].expert_fraction.size(), 4u);
      double sum = 0;
      for (double f : out.router_stats[0].expert_fraction) sum += f;
      EXPECT_NEAR(sum, 1.0, 1e-5);
      EXPECT_GE(out.router_stats[0].entropy, 0.0);
      EXPECT_LE(out.router_stats[0].entropy, std::log(4.0) + 1e-6);
      torch::Tensor t = torch::randint(0, 8, {3, 2}, torch::kInt64);
      EXPECT_TRUE(std::isfinite(SravenLoss(out.logits, t).item<double>()));
    }
  }
}

// Naive loop implementation of docs/sraven.md 2.2 + 3 for one attention
// layer.
torch::Tensor NaiveAttention(AttentionImpl& m, const ModelConfig& c,
                             const torch::Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), d = c.model_dim(),
                h = c.num_heads(), dk = c.head_dim(), dv = c.v_dim() / h;
  auto X = x.accessor<double, 3>();
  auto wq = m.wq.accessor<double, 2>(), wk = m.wk.accessor<double, 2>(),
       wv = m.wv.accessor<double, 2>(), wo = m.wo.accessor<double, 2>();
  auto bq = m.bq.accessor<double, 2>(), bk = m.bk.accessor<double, 2>(),
       bv = m.bv.accessor<double, 2>();
  auto bo = m.bo.accessor<double, 1>();
  auto rb = m.rel_bias.accessor<double, 2>();
  torch::Tensor out = torch::zeros({b, t, d}, torch::kFloat64);
  auto O = out.accessor<double, 3>();
  const ScoreNorm norm = ScoreNormOf(c.attention);
  const ValueNet net = ValueNetOf(c.attention);
  for (int64_t n = 0; n < b; ++n) {
    // q,k,v[head][pos][dim]
    std::vector<double> q(h * t * dk), k(h * t * dk), v(h * t * dv);
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t p = 0; p < t; ++p) {
        for (int64_t j = 0; j < dk; ++j) {
          double sq = bq[hh][j], sk = bk[hh][j];
          for (int64_t i = 0; i < d; ++i) {
            sq += X[n][p][i] * wq[i][hh * dk + j];
            sk += X[n][p][i] * wk[i][hh * dk + j];
          }
          q[(hh * t + p) * dk + j] = sq;
          k[(hh * t + p) * dk + j] = sk;
        }
        for (int64_t j = 0; j < dv; ++j) {
          double sv = bv[hh][j];
          for (int64_t i = 0; i < d; ++i) sv += X[n][p][i] * wv[i][hh * dv + j];
          v[(hh * t + p) * dv + j] = sv;
        }
      }
    std::vector<double> a(h * t * t);  // a[h][q][k]
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t qi = 0; qi < t; ++qi)
        for (int64_t ki = 0; ki < t; ++ki) {
          double s = 0;
          for (int64_t j = 0; j < dk; ++j)
            s += q[(hh * t + qi) * dk + j] * k[(hh * t + ki) * dk + j];
          s = s / 2.0 + rb[hh][RelativePositionBucket(qi, ki, t, t)];
          a[(hh * t + qi) * t + ki] = s;
        }
    if (norm == ScoreNorm::kSoftmaxOverKeys) {
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t qi = 0; qi < t; ++qi) {
          double mx = -1e300, z = 0;
          for (int64_t ki = 0; ki < t; ++ki)
            mx = std::max(mx, a[(hh * t + qi) * t + ki]);
          for (int64_t ki = 0; ki < t; ++ki)
            z += std::exp(a[(hh * t + qi) * t + ki] - mx);
          for (int64_t ki = 0; ki < t; ++ki)
            a[(hh * t + qi) * t + ki] =
                std::exp(a[(hh * t + qi) * t + ki] - mx) / z;
        }
    } else if (norm == ScoreNorm::kRmsOverHeads) {
      for (int64_t qi = 0; qi < t; ++qi)
        for (int64_t ki = 0; ki < t; ++ki) {
          double ms = 0;
          for (int64_t hh = 0; hh < h; ++hh)
            ms += std::pow(a[(hh * t + qi) * t + ki], 2) / h;
          for (int64_t hh = 0; hh < h; ++hh)
            a[(hh * t + qi) * t + ki] /= std::sqrt(ms + 1e-6);
        }
    }
    for (int64_t qi = 0; qi < t; ++qi) {
      std::vector<double> y(h * dv, 0.0);  // y[h][dv]
      if (net == ValueNet::kLinear) {
        for (int64_t hh = 0; hh < h; ++hh)
          for (int64_t ki = 0; ki < t; ++ki)
            for (int64_t j = 0; j < dv; ++j)
              y[hh * dv + j] +=
                  a[(hh * t + qi) * t + ki] * v[(hh * t + ki) * dv + j];
      } else {
        for (int64_t ki = 0; ki < t; ++ki) {
          std::vector<double> u(dv, 0.0);
          for (int64_t hh = 0; hh < h; ++hh)
            for (int64_t j = 0; j < dv; ++j)
              u[j] += a[(hh * t + qi) * t + ki] * v[(hh * t + ki) * dv + j];
          if (net == ValueNet::kTwoLayerRelu)
            for (double& uj : u) uj = std::max(uj, 0.0);
          for (int64_t hh = 0; hh < h; ++hh)
            for (int64_t j = 0; j < dv; ++j)
              y[hh * dv + j] += a[(hh * t + qi) * t + ki] * u[j];
        }
      }
      for (int64_t o = 0; o < d; ++o) {
        double s = bo[o];
        for (int64_t j = 0; j < h * dv; ++j) s += y[j] * wo[j][o];
        O[n][qi][o] = s;
      }
    }
  }
  return out;
}

TEST(ModelTest, AttentionVariantsMatchNaiveLoops) {
  torch::manual_seed(1);
  for (AttentionKind kind :
       {AttentionKind::kHyla, AttentionKind::kSoftmax, AttentionKind::kLinear,
        AttentionKind::kLinearRmsHead, AttentionKind::kHylaNoRmsHead,
        AttentionKind::kHylaMlpLinear, AttentionKind::kHylaMlpLinearNoRmsHead,
        AttentionKind::kSoftmaxHyla}) {
    ModelConfig c = Tiny();
    c.width = 0.25;  // D = 32, H = 4
    c.attention = kind;
    Attention attn(c);
    attn->to(torch::kFloat64);
    attn->eval();
    {
      torch::NoGradGuard ng;
      attn->bq.normal_();  // non-zero biases exercise the bias paths
      attn->bv.normal_();
      attn->bo.normal_();
    }
    torch::Tensor x = torch::randn({2, 9, 32}, torch::kFloat64);
    torch::NoGradGuard ng;
    torch::Tensor got = attn->forward(x);
    torch::Tensor want = NaiveAttention(*attn, c, x);
    EXPECT_TRUE(torch::allclose(got, want, 1e-9, 1e-10))
        << AttentionKindName(kind) << " max diff "
        << (got - want).abs().max().item<double>();
  }
}

TEST(ModelTest, AttentionDropoutSharesOneMask) {
  ModelConfig c = Tiny();
  c.attention = AttentionKind::kLinear;
  c.attention_dropout = 0.5;
  Attention attn(c);
  attn->train();
  // Identical sequences in a batch get the same outputs iff the mask is
  // shared over the batch. The same up to rounding, not bit for bit: BLAS
  // kernels may round rows of one batched product differently (OpenBLAS's
  // Prescott and Haswell kernels do; issue 31 item 2). A mask that differs
  // between rows changes them by O(1), far beyond the tolerance.
  torch::Tensor x = torch::randn({1, 9, 16}).repeat({3, 1, 1});
  torch::NoGradGuard ng;
  torch::Tensor y = attn->forward(x);
  EXPECT_TRUE(torch::allclose(y[0], y[1], 1e-5, 1e-6))
      << (y[0] - y[1]).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(y[0], y[2], 1e-5, 1e-6))
      << (y[0] - y[2]).abs().max().item<float>();
  attn->eval();
  EXPECT_FALSE(torch::allclose(attn->forward(x)[0], y[0], 1e-3, 1e-3));
}

double FiniteDifferenceCheck(SmoeTransformer& model, const torch::Tensor& x,
                             const torch::Tensor& t, int per_param) {
  model->eval();
  auto loss_fn = [&]() {
    ForwardOutput o = model->forward(x);
    return SravenLoss(o.logits, t) + o.aux_loss;
  };
  model->zero_grad();
  loss_fn().backward();
  double worst = 0;
  torch::NoGradGuard ng;
  for (auto& p : model->named_parameters()) {
    torch::Tensor flat = p.value().view({-1});
    torch::Tensor g = p.value().grad().view({-1});
    for (int i = 0; i < per_param; ++i) {
      const int64_t j = (i * 7919) % flat.numel();
      const double orig = flat[j].item<double>();
      const double eps = 1e-6;
      flat[j] = orig + eps;
      const double up = loss_fn().item<double>();
      flat[j] = orig - eps;
      const double down = loss_fn().item<double>();
      flat[j] = orig;
      const double fd = (up - down) / (2 * eps);
      const double an = g[j].item<double>();
      const double err = std::fabs(fd - an) / std::max(1e-4, std::fabs(fd));
      worst = std::max(worst, err);
      EXPECT_LT(err, 1e-4) << p.key() << "[" << j << "] fd=" << fd
                           << " autograd=" << an;
    }
  }
  return worst;
}

TEST(ModelTest, GradientCheckDoublePrecision) {
  torch::manual_seed(3);
  struct Case {
    AttentionKind attention;
    RouterKind router;
    Dispatch dispatch;
  };
  for (const Case& cs :
       {Case{AttentionKind::kHyla, RouterKind::kTopK, Dispatch::kGather},
        Case{AttentionKind::kSoftmax, RouterKind::kTopK, Dispatch::kDense},
        Case{AttentionKind::kLinear, RouterKind::kSoft, Dispatch::kGather}}) {
    ModelConfig c = Tiny();
    c.attention = cs.attention;
    c.router = cs.router;
    c.dispatch = cs.dispatch;
    c.load_balance_alpha = 0.01;
    SmoeTransformer model(c);
    model->to(torch::kFloat64);
    torch::Tensor x = torch::rand({2, 9, 8}, torch::kFloat64);
    torch::Tensor t = torch::randint(0, 8, {2, 1}, torch::kInt64);
    FiniteDifferenceCheck(model, x, t, 3);
  }
}

TEST(ModelTest, CrossBlockAddLayerNormEqualsPerBlockForward) {
  // SmoeTransformer::forward fuses each block's last residual add with the
  // next LayerNorm (the next block's ln1, or final_ln); the per-block path
  // (Block::forward, then final_ln) must give the same logits, auxiliary
  // loss and parameter gradients (float32: rounding only; float64: 1e-12).
  for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    torch::manual_seed(12);
    ModelConfig c = Tiny();
    c.depth = 3;
    c.dispatch = Dispatch::kOps;
    c.load_balance_alpha = 0.01;
    SmoeTransformer model(c);
    model->to(dtype);
    model->eval();  // no dropout: both paths see the same function
    for (auto& p : model->parameters()) {  // non-trivial LayerNorm affines
      torch::NoGradGuard no_grad;
      if (p.dim() == 1) p.add_(torch::randn_like(p).mul_(0.3));
    }
    const auto o = torch::TensorOptions(dtype);
    torch::Tensor x = torch::rand({3, 9, 8}, o);
    torch::Tensor probe = torch::randn({3, 9, 8}, o);
    std::vector<torch::Tensor> grads[2];
    torch::Tensor logits[2], aux[2];
    for (int path = 0; path < 2; ++path) {
      model->zero_grad();
      if (path == 0) {
        ForwardOutput out = model->forward(x);
        logits[0] = out.logits;
        aux[0] = out.aux_loss;
      } else {
        torch::Tensor h = torch::matmul(x, model->embed_w) + model->embed_b;
        aux[1] = torch::zeros({}, o);
        for (auto& block : model->blocks) {
          torch::Tensor a;
          h = block->forward(h, &a, nullptr);
          aux[1] = aux[1] + a;
        }
        logits[1] =
            torch::matmul(model->final_ln->forward(h), model->readout_w) +
            model->readout_b;
      }
      ((logits[path] * probe).sum() + aux[path]).backward();
      for (auto& p : model->parameters())
        grads[path].push_back(p.grad().clone());
    }
    const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    SCOPED_TRACE(::testing::Message() << "dtype " << dtype);
    EXPECT_TRUE(torch::allclose(logits[0], logits[1], tol, tol))
        << (logits[0] - logits[1]).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(aux[0], aux[1], tol, tol));
    const auto names = model->named_parameters().keys();
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 10 * tol, tol))
          << names[i] << " "
          << (grads[0][i] - grads[1][i]).abs().max().item<double>();
    }
  }
}

// Brute force: per token sort expert ids by (-logit, id).
TEST(MoeTest, RouterTopKMatchesBruteForceWithTies) {
  torch::manual_seed(5);
  const int n = 50, e = 6;
  // Quantised logits make ties common.
  torch::Tensor logits =
      torch::randint(0, 3, {n, e}, torch::kInt64).to(torch::kFloat64);
  auto L = logits.accessor<double, 2>();
  for (RouterGating gating :
       {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
    for (int k = 1; k <= e; ++k) {
      absl::StatusOr<RouterOutput> r = ops::RouterTopK(logits, k, gating);
      ASSERT_TRUE(r.ok()) << r.status();
      auto I = r->topk_idx.accessor<int32_t, 2>();
      auto G = r->topk_weights.accessor<double, 2>();
      for (int i = 0; i < n; ++i) {
        std::vector<int> ids(e);
        std::iota(ids.begin(), ids.end(), 0);
        std::sort(ids.begin(), ids.end(), [&](int a, int b) {
          return L[i][a] != L[i][b] ? L[i][a] > L[i][b] : a < b;
        });
        double z_all = 0, z_k = 0;
        for (int j = 0; j < e; ++j) z_all += std::exp(L[i][j]);
        for (int j = 0; j < k; ++j) z_k += std::exp(L[i][ids[j]]);
        for (int j = 0; j < k; ++j) {
          ASSERT_EQ(I[i][j], ids[j]) << "token " << i << " k=" << k;
          const double want = gating == RouterGating::kRenormalized
                                  ? std::exp(L[i][ids[j]]) / z_k
                                  : std::exp(L[i][ids[j]]) / z_all;
          EXPECT_NEAR(G[i][j], want, 1e-12);
        }
      }
    }
  }
}

TEST(MoeTest, KEqualsEIsDenseSoftmaxMixtureAndDispatchesAgree) {
  torch::manual_seed(7);
  ModelConfig c = Tiny();
  c.top_k = c.num_experts;
  SmoeLayer layer(c);
  layer->to(torch::kFloat64);
  torch::Tensor x = torch::randn({2, 9, 16}, torch::kFloat64);
  torch::NoGradGuard ng;
  torch::Tensor flat = x.reshape({-1, 16});
  torch::Tensor p = torch::softmax(layer->RouterLogits(flat), -1);
  torch::Tensor want = torch::zeros_like(flat);
  for (int e = 0; e < c.num_experts; ++e) {
    want += p.select(1, e).unsqueeze(1) * layer->Expert(e, flat);
  }
  for (Dispatch d : {Dispatch::kGather, Dispatch::kDense}) {
    layer->set_dispatch(d);
    torch::Tensor got = layer->forward(x, nullptr, nullptr).reshape({-1, 16});
    EXPECT_TRUE(torch::allclose(got, want, 1e-10, 1e-12)) << DispatchName(d);
  }
}

TEST(MoeTest, GatherAndDenseDispatchAgreeAtK2) {
  torch::manual_seed(8);
  ModelConfig c = Tiny();
  c.num_experts = 8;
  for (RouterGating g :
       {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
    c.gating = g;
    SmoeLayer layer(c);
    layer->to(torch::kFloat64);
    torch::Tensor x = torch::randn({3, 9, 16}, torch::kFloat64);
    torch::NoGradGuard ng;
    layer->set_dispatch(Dispatch::kGather);
    torch::Tensor a = layer->forward(x, nullptr, nullptr);
    layer->set_dispatch(Dispatch::kDense);
    torch::Tensor b = layer->forward(x, nullptr, nullptr);
    EXPECT_TRUE(torch::allclose(a, b, 1e-10, 1e-12));
  }
}

TEST(MoeTest, LoadBalanceLoss) {
  ModelConfig c = Tiny();
  c.load_balance_alpha = 0.01;
  SmoeLayer layer(c);
  torch::Tensor x = torch::randn({2, 9, 16});
  torch::Tensor aux;
  RouterStats stats;
  layer->forward(x, &aux, &stats);
  torch::Tensor p =
      torch::softmax(layer->RouterLogits(x.reshape({-1, 16})), -1).mean(0);
  double want = 0;
  for (int e = 0; e < 4; ++e) {
    want += stats.expert_fraction[e] * p[e].item<double>();
  }
  EXPECT_NEAR(aux.item<double>(), 0.01 * 4 * want, 1e-6);
}

TEST(MoeTest, SoftMoeNormalisationAndAlgorithm1) {
  torch::manual_seed(9);
  ModelConfig c = Tiny();
  c.router = RouterKind::kSoft;
  c.soft_slots_per_expert = 2;
  SmoeLayer layer(c);
  layer->to(torch::kFloat64);
  torch::Tensor x = torch::randn({3, 9, 16}, torch::kFloat64);
  torch::NoGradGuard ng;
  auto [d, cw] = layer->SoftWeights(x);  // [B, T, S]
  EXPECT_TRUE(torch::allclose(d.sum(1), torch::ones({3, 8}, torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(cw.sum(2), torch::ones({3, 9}, torch::kFloat64)));

  // Plain Soft MoE by hand.
  torch::Tensor slots = torch::matmul(d.transpose(1, 2), x);  // [B, 8, D]
  std::vector<torch::Tensor> outs;
  for (int s = 0; s < 8; ++s) {
    outs.push_back(layer->Expert(s / 2, slots.select(1, s)));
  }
  torch::Tensor ys = torch::stack(outs, 1);  // [B, 8, D]
  torch::Tensor plain = torch::matmul(cw, ys);
  layer->train();
  EXPECT_TRUE(torch::allclose(layer->forward(x, nullptr, nullptr), plain, 1e-10,
                              1e-12));

  // Algorithm 1 with k = E equals plain Soft MoE.
  c.top_k = 4;
  SmoeLayer full(c);
  full->to(torch::kFloat64);
  for (size_t i = 0; i < layer->parameters().size(); ++i) {
    full->parameters()[i].copy_(layer->parameters()[i]);
  }
  full->eval();
  EXPECT_TRUE(
      torch::allclose(full->forward(x, nullptr, nullptr), plain, 1e-10, 1e-12));

  // Algorithm 1 with k = 2 (layer's top_k): zero the rows of the experts
  // outside the two with the largest summed combine weight.
  layer->eval();
  torch::Tensor csum = cw.view({3, 9, 4, 2}).sum(3).sum(1);  // [B, E]
  torch::Tensor want = torch::empty_like(plain);
  for (int b = 0; b < 3; ++b) {
    std::vector<int> ids = {0, 1, 2, 3};
    std::sort(ids.begin(), ids.end(), [&](int i, int j) {
      double a = csum[b][i].item<double>(), bb = csum[b][j].item<double>();
      return a != bb ? a > bb : i < j;
    });
    torch::Tensor yb = ys[b].clone();
    for (int r = 2; r < 4; ++r) {
      yb.narrow(0, ids[r] * 2, 2).zero_();
    }
    want[b] = torch::matmul(cw[b], yb);
  }
  EXPECT_TRUE(
      torch::allclose(layer->forward(x, nullptr, nullptr), want, 1e-10, 1e-12));
  EXPECT_FALSE(torch::allclose(want, plain, 1e-6, 1e-6));
}

TEST(ModelTest, WeightDecayMask) {
  ModelConfig c = Tiny();
  c.router = RouterKind::kTopK;
  SmoeTransformer model(c);
  std::map<std::string, bool> decay;
  for (const auto& p : model->named_parameters()) {
    decay[p.key()] = DecayParameter(p.key(), p.value());
  }
  const std::map<std::string, bool> want = {{"embed_w", true},
                                            {"embed_b", false},
                                            {"block0.ln1.weight", false},
                                            {"block0.ln1.bias", false},
                                            {"block0.attn.wq", true},
                                            {"block0.attn.bq", true},
                                            {"block0.attn.wk", true},
                                            {"block0.attn.bk", true},
                                            {"block0.attn.wv", true},
                                            {"block0.attn.bv", true},
                                            {"block0.attn.wo", true},
                                            {"block0.attn.bo", false},
                                            {"block0.attn.rel_bias", true},
                                            {"block0.ln2.weight", false},
                                            {"block0.ln2.bias", false},
                                            {"block0.moe.expert_w1", true},
                                            {"block0.moe.expert_b1", false},
                                            {"block0.moe.expert_w2", true},
                                            {"block0.moe.expert_b2", false},
                                            {"block0.moe.router_w", true},
                                            {"final_ln.weight", false},
                                            {"final_ln.bias", false},
                                            {"readout_w", true},
                                            {"readout_b", false}};
  EXPECT_EQ(decay, want);
}

TEST(ModelTest, LecunNormalStatistics) {
  torch::manual_seed(11);
  torch::Tensor t = LecunNormal({256, 512}, 256);
  EXPECT_NEAR(t.std().item<double>(), 1.0 / 16.0, 1e-3);
  EXPECT_LE(t.abs().max().item<double>(), 2.0 / 16.0 / 0.8796 + 1e-6);
}

}  // namespace
}  // namespace smoe::model
